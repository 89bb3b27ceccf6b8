"""Environment step rate: GridExplore (random valid actions) next to MiniGrid-Empty-16x16-v0.

    python -m bench.env_speed [--seconds 5] [--env-id GridExplore-v0]

Both envs are built with ``gymnasium.make`` (so both carry gymnasium's default wrappers) and
reset whenever an episode ends; resets count towards the time. MiniGrid is optional
(``pip install -r requirements-bench.txt``); without it only our figure is printed.
"""
from __future__ import annotations

import argparse
import time

import gymnasium as gym
import numpy as np

import env  # noqa: F401  (registers the GridExplore ids)
from env.observation import ACTION_MASK


def steps_per_second(make, choose, seconds: float) -> tuple[float, int]:
    """Steps per second of ``make()`` under ``choose(obs, env)`` for about ``seconds``."""
    environment = make()
    obs, _ = environment.reset(seed=0)
    steps, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < seconds:
        for _ in range(100):
            obs, _, terminated, truncated, _ = environment.step(choose(obs, environment))
            steps += 1
            if terminated or truncated:
                obs, _ = environment.reset()
    environment.close()
    return steps / elapsed, steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=5.0, help="time per env (default 5)")
    parser.add_argument("--env-id", default="GridExplore-v0", help="our env id (default GridExplore-v0)")
    args = parser.parse_args()

    rng = np.random.default_rng(0)

    def random_valid(obs, _):
        valid = np.flatnonzero(obs[ACTION_MASK])
        return int(valid[rng.integers(len(valid))])

    ours, n = steps_per_second(lambda: gym.make(args.env_id),
                               random_valid,
                               args.seconds)
    print(f"{args.env_id:<28} {ours:10.0f} steps/s  ({n} steps, random valid actions)")
    try:
        import minigrid  # noqa: F401  (registers the MiniGrid ids)
    except ImportError:
        print("MiniGrid not installed (pip install -r requirements-bench.txt): no comparison")
        return
    theirs, n = steps_per_second(lambda: gym.make("MiniGrid-Empty-16x16-v0"),
                                 lambda _, environment: environment.action_space.sample(), args.seconds)
    print(f"{'MiniGrid-Empty-16x16-v0':<28} {theirs:10.0f} steps/s  ({n} steps, random actions)")
    print(f"ratio (ours / MiniGrid)      {ours / theirs:10.2f}")


if __name__ == "__main__":
    main()
