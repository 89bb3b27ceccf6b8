"""Hand-written policies that act through the env's own action space.

Each is a callable ``policy(obs, env) -> slot``. ``env`` is the env as ``gymnasium.make``
returns it, wrappers and all, or the :class:`~env.grid_explore.GridExploreEnv` itself; a baseline
reads the viewpoint graph and the robot's node through ``env.unwrapped`` (gymnasium 1.x wrappers
no longer forward attributes), the state ``obs`` shows, so play-outs can move a copy with
``GridExploreEnv.play`` and never build an observation (``greedy_move``).
"""
from __future__ import annotations

from collections.abc import Callable

import gymnasium as gym
import numpy as np

from env.grid_explore import GridExploreEnv
from env.observation import ACTION_MASK
from env.sensing import UNKNOWN

Policy = Callable[[dict, gym.Env], int]


def random_valid(obs: dict, env: gym.Env) -> int:
    """A uniformly random unmasked slot, drawn from the env's seeded generator (reproducible)."""
    valid = np.flatnonzero(obs[ACTION_MASK])
    return int(valid[env.unwrapped.np_random.integers(len(valid))])


random_valid.draws_at_random = True  # back in a state, it draws again: no cycle to break (env.episode.run_episode)


def nearest_frontier_move(world: GridExploreEnv) -> int:
    """First hop of the shortest graph path to the nearest node with utility > 0 (stay if none):
    the first node of the robot's guidepost."""
    path = world.guidepost()
    return int(np.flatnonzero(world.robot_neighbors() == path[0])[0]) if path else 0


def greedy_move(world: GridExploreEnv) -> int:
    """The neighbour with the most utility per cell travelled; nearest frontier when none has any.

    The fallback matters: once every neighbour is explored, a purely local rule would stall.
    """
    graph, current, neighbors = world.graph, world.robot_node, world.robot_neighbors().tolist()
    best, best_score = None, 0.0
    for slot in range(1, len(neighbors)):
        node = neighbors[slot]
        if node < 0:
            continue
        score = graph.utility[node] / graph.slot_length(current, slot)
        if score > best_score:
            best, best_score = slot, score
    return nearest_frontier_move(world) if best is None else best


def nearest_frontier(obs: dict, env: gym.Env) -> int:
    """``nearest_frontier_move`` of the env ``obs`` comes from."""
    return nearest_frontier_move(env.unwrapped)


def greedy(obs: dict, env: gym.Env) -> int:
    """``greedy_move`` of the env ``obs`` comes from."""
    return greedy_move(env.unwrapped)


def known_cells(world: GridExploreEnv) -> int:
    """How many cells of ``world``'s belief are known (free or occupied): grows whenever a cell is newly seen."""
    return int(np.count_nonzero(world.belief != UNKNOWN))


def greedy_on_return(policy: Policy) -> Policy:
    """``policy``, except that back on a node where it chose at an earlier step of the episode,
    with no cell seen since, it takes greedy's move. A policy that reads only the belief and the
    robot's node (a lookahead in a guessed world, ``planner.actor.planning_actor``) would choose as
    it did then and go round for good (it did on 2 of 100 maps of 48 x 48 cells); greedy's move
    leads on until something new is seen. Remembers one episode at a time (it starts afresh at
    step 0). A node is known by its cell, which within an env's episode is its id's for good; an
    ``explorer.Explorer`` builds its graph afresh from each belief, its ids anew."""
    chosen_at: dict[tuple[int, int], tuple[int, int]] = {}  # node's cell -> (step, known cells) of the last choice

    def act(obs: dict, env: gym.Env) -> int:
        world = env.unwrapped
        if world.steps == 0:
            chosen_at.clear()
        node = tuple(world.graph.node_rc[world.robot_node].tolist())
        known, before = known_cells(world), chosen_at.get(node)
        if before is not None and before[0] < world.steps and before[1] == known:
            return greedy(obs, env)  # the same state as then: the same choice would go round again
        chosen_at[node] = (world.steps, known)
        return policy(obs, env)
    return act


BASELINES: dict[str, Policy] = {
    "random": random_valid,
    "nearest_frontier": nearest_frontier,
    "greedy": greedy,
}
