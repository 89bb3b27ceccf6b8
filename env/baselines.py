"""Hand-written policies that act through the env's own action space.

Each is a callable ``policy(obs, env) -> slot``. ``env`` is the env as ``gymnasium.make``
returns it, wrappers and all, or the :class:`~env.grid_explore.GridExploreEnv` itself; a baseline
reads the viewpoint graph through ``env.unwrapped`` (gymnasium 1.x wrappers no longer forward
attributes).
"""
from __future__ import annotations

from typing import Callable

import gymnasium as gym
import numpy as np

from env.observation import ACTION_MASK, CURRENT_INDEX, NEIGHBORS

Policy = Callable[[dict, gym.Env], int]


def random_valid(obs: dict, env: gym.Env) -> int:
    """A uniformly random unmasked slot, drawn from the env's seeded generator (reproducible)."""
    valid = np.flatnonzero(obs[ACTION_MASK])
    return int(valid[env.unwrapped.np_random.integers(len(valid))])


def _slot_towards(obs: dict, node: int) -> int:
    return int(np.flatnonzero(obs[NEIGHBORS][int(obs[CURRENT_INDEX])] == node)[0])


def nearest_frontier(obs: dict, env: gym.Env) -> int:
    """First hop of the shortest graph path to the nearest node with utility > 0 (stay if none):
    the first node of the observation's guidepost."""
    path = env.unwrapped.guidepost()
    return _slot_towards(obs, path[0]) if path else 0


def greedy(obs: dict, env: gym.Env) -> int:
    """The neighbour with the most utility per cell travelled; nearest frontier when none has any.

    The fallback matters: once every neighbour is explored, a purely local rule would stall.
    """
    graph, current = env.unwrapped.graph, int(obs[CURRENT_INDEX])
    best, best_score = None, 0.0
    for slot in range(1, obs[NEIGHBORS].shape[1]):
        node = int(obs[NEIGHBORS][current, slot])
        if node >= 0 and graph.utility[node] / graph.slot_length(current, slot) > best_score:
            best, best_score = slot, graph.utility[node] / graph.slot_length(current, slot)
    return nearest_frontier(obs, env) if best is None else best


BASELINES: dict[str, Policy] = {
    "random": random_valid,
    "nearest_frontier": nearest_frontier,
    "greedy": greedy,
}
