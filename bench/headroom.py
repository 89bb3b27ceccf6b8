"""How far greedy is from the best possible: greedy against lookaheads that roll greedy out.

    python -m bench.headroom [--episodes 40] [--seed 0]

A lookahead tries every valid move in a copy of the env and plays greedy to the end of the episode
from there; it takes the move whose finished episode travelled least. Two copies are compared:

- ``oracle``: ``GridExploreEnv.lookahead_copy``, which holds the true map. No policy can match it; it
  shows how much shorter than greedy's a route can be on these maps, i.e. the room above greedy.
- ``belief lookahead``: ``GridExploreEnv.belief_world_copy``, the robot's belief with every
  unknown cell a wall, so it knows what the agent knows and nothing more. Its rollouts price the
  cost of clearing the frontiers already seen (leaving a pocket behind shows as a return trip).
  It shows how much of that room a one-step lookahead can reach without the map.

Runs nearest frontier, greedy and both lookaheads on the held-out maps of ``evaluate.py`` and
prints the per-map travel ratios.
"""
from __future__ import annotations

import openmp_wait  # noqa: F401  (first: how torch's threads wait; see the module)

import argparse
from collections.abc import Callable

import numpy as np

from config import load_config
from env.baselines import Policy, greedy, nearest_frontier
from env.greedy_value import play_greedy
from env.grid_explore import GridExploreEnv
from env.observation import ACTION_MASK
from rl.evaluation import evaluate_actors, travel_ratio
from stats import format_mean_ci


def travel_after(world: GridExploreEnv, slot: int) -> float:
    """Travel at the end of the episode if the robot takes ``slot`` in ``world`` and then plays
    greedy; infinite if the step limit comes first. ``world`` itself is left as it was."""
    world = world.lookahead_copy()
    obs, _, terminated, truncated, _ = world.step(slot)
    if not (terminated or truncated):
        _, _, terminated = play_greedy(world, obs, world.config.max_steps - world.steps)
    return world.travel_distance if terminated else float("inf")


def greedy_lookahead(imagine: Callable[[GridExploreEnv], GridExploreEnv]) -> Policy:
    """The policy taking the valid move after which greedy finishes with the least travel in the
    world ``imagine(env)`` (ties: lowest slot)."""
    def act(obs: dict, env: GridExploreEnv) -> int:
        world = imagine(env)
        slots = np.flatnonzero(obs[ACTION_MASK])
        return int(slots[np.argmin([travel_after(world, int(slot)) for slot in slots])])
    return act


greedy_lookahead_oracle = greedy_lookahead(lambda env: env)
"""Looks ahead in the true world (``travel_after`` copies it)."""
belief_lookahead = greedy_lookahead(GridExploreEnv.belief_world_copy)
"""Looks ahead in what the robot knows, the unknown taken as walls."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    config = load_config("configs/default.yaml")
    actors = {"nearest_frontier": nearest_frontier, "greedy": greedy, "oracle": greedy_lookahead_oracle,
              "belief_lookahead": belief_lookahead}
    results = evaluate_actors(actors, config.env, args.episodes, args.seed)
    for ours in ("greedy", "oracle", "belief_lookahead"):
        for reference in ("nearest_frontier", "greedy"):
            if ours != reference:
                mean, half, n = travel_ratio(results[ours], results[reference])
                print(f"travel {ours} / {reference}: {format_mean_ci(mean, half, 3)} (n={n})")


if __name__ == "__main__":
    main()
