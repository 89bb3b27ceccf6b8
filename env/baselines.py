"""Hand-written policies that act through the env's own action space.

Each is a callable ``policy(obs, env) -> slot``; ``env`` is the unwrapped
:class:`~env.grid_explore.GridExploreEnv`, so a baseline may read its viewpoint graph.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from env.grid_explore import GridExploreEnv
from env.observation import ACTION_MASK, CURRENT_INDEX, NEIGHBORS

Policy = Callable[[dict, GridExploreEnv], int]


def random_valid(obs: dict, env: GridExploreEnv) -> int:
    """A uniformly random unmasked slot, drawn from the env's seeded generator (reproducible)."""
    valid = np.flatnonzero(obs[ACTION_MASK])
    return int(valid[env.np_random.integers(len(valid))])


def _slot_towards(obs: dict, node: int) -> int:
    return int(np.flatnonzero(obs[NEIGHBORS][int(obs[CURRENT_INDEX])] == node)[0])


def nearest_frontier(obs: dict, env: GridExploreEnv) -> int:
    """First hop of the shortest graph path to the nearest node with utility > 0 (stay if none):
    the first node of the observation's guidepost."""
    path = env.guidepost()
    return _slot_towards(obs, path[0]) if path else 0


def greedy(obs: dict, env: GridExploreEnv) -> int:
    """The neighbour with the most utility per cell travelled; nearest frontier when none has any.

    The fallback matters: once every neighbour is explored, a purely local rule would stall.
    """
    current = int(obs[CURRENT_INDEX])
    best, best_score = None, 0.0
    for slot in range(1, obs[NEIGHBORS].shape[1]):
        node = int(obs[NEIGHBORS][current, slot])
        if node >= 0 and env.graph.utility[node] / env.graph.slot_length(slot) > best_score:
            best, best_score = slot, env.graph.utility[node] / env.graph.slot_length(slot)
    return nearest_frontier(obs, env) if best is None else best


BASELINES: dict[str, Policy] = {
    "random": random_valid,
    "nearest_frontier": nearest_frontier,
    "greedy": greedy,
}
