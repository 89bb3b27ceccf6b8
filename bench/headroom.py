"""How far greedy is from the best possible: greedy against a lookahead that knows the true map.

    python -m bench.headroom [--episodes 40] [--seed 0]

The lookahead tries every valid move in a copy of the env (``copy.deepcopy``) and plays greedy to
the end of the episode from there; it takes the move whose finished episode travelled least. The
copy holds the true map, so this is an oracle no policy can match, not a baseline: it shows how
much shorter than greedy's a route can be on these maps, i.e. the room left above greedy. Runs
nearest frontier, greedy and the oracle on the held-out maps of ``evaluate.py`` and prints the
per-map travel ratios.
"""
from __future__ import annotations

import argparse
import copy

import numpy as np

from config import load_config
from env.baselines import greedy, nearest_frontier
from env.grid_explore import GridExploreEnv
from env.observation import ACTION_MASK
from rl.evaluation import evaluate_actors, travel_ratio


def travel_after(env: GridExploreEnv, slot: int) -> float:
    """Travel at the end of the episode if the robot takes ``slot`` and then plays greedy;
    infinite if the step limit comes first."""
    env = copy.deepcopy(env)
    obs, _, terminated, truncated, _ = env.step(slot)
    while not (terminated or truncated):
        obs, _, terminated, truncated, _ = env.step(greedy(obs, env))
    return env.travel_distance if terminated else float("inf")


def greedy_lookahead_oracle(obs: dict, env: GridExploreEnv) -> int:
    """The valid move after which greedy finishes with the least travel (ties: lowest slot)."""
    slots = np.flatnonzero(obs[ACTION_MASK])
    return int(slots[np.argmin([travel_after(env, int(slot)) for slot in slots])])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    config = load_config("configs/default.yaml")
    actors = {"nearest_frontier": nearest_frontier, "greedy": greedy, "oracle": greedy_lookahead_oracle}
    results = evaluate_actors(actors, config.env, args.episodes, args.seed)
    for ours, reference in (("greedy", "nearest_frontier"), ("oracle", "nearest_frontier"), ("oracle", "greedy")):
        mean, half, n = travel_ratio(results[ours], results[reference])
        print(f"travel {ours} / {reference}: {mean:.3f} ± {half:.3f} (n={n})")


if __name__ == "__main__":
    main()
