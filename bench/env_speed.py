"""Environment step rate: GridExplore (random valid actions) next to MiniGrid-Empty-16x16-v0,
and what ``GreedyValue`` (W(s) in every step's info, for ``ppo.gae_values: greedy_rollout``) costs.

    python -m bench.env_speed [--seconds 5] [--env-id GridExplore-v0]

Every env is built with ``gymnasium.make`` (so all carry gymnasium's default wrappers) and
reset whenever an episode ends; resets count towards the time. MiniGrid is optional
(``pip install -r requirements-bench.txt``); without it its line is left out. ``GreedyValue`` is
timed under a policy like a trained agent's (greedy's move 90% of the time, a random one
otherwise: greedy plays out again after each of those), next to the bare env under the same policy;
the copy it plays in, ``GridExploreEnv.lookahead_copy``, is timed next to ``copy.deepcopy``, and
a reset of the bare env (a new map each time) on its own.
"""
from __future__ import annotations

import argparse
import copy
import time

import gymnasium as gym
import numpy as np

import env  # noqa: F401  (registers the GridExplore ids)
from env.baselines import greedy
from env.greedy_value import GreedyValue
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


def reset_milliseconds(env_id: str, resets: int = 100) -> float:
    """Milliseconds per ``reset(seed=s)`` of the bare env, s = 0 .. resets - 1 (a new map each)."""
    world = gym.make(env_id).unwrapped
    world.reset(seed=resets)  # warm-up: per-process tables
    start = time.perf_counter()
    for seed in range(resets):
        world.reset(seed=seed)
    return (time.perf_counter() - start) / resets * 1e3


def copy_milliseconds(env_id: str, copies: int = 200) -> tuple[float, float]:
    """Milliseconds per ``copy.deepcopy`` and per ``lookahead_copy`` of one env 20 greedy moves in."""
    environment = gym.make(env_id)
    obs, _ = environment.reset(seed=0)
    world = environment.unwrapped
    for _ in range(20):
        obs, _, terminated, truncated, _ = environment.step(greedy(obs, world))
        if terminated or truncated:
            break
    timings = []
    for make_copy in (copy.deepcopy, type(world).lookahead_copy):
        start = time.perf_counter()
        for _ in range(copies):
            make_copy(world)
        timings.append((time.perf_counter() - start) / copies * 1e3)
    environment.close()
    return timings[0], timings[1]


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

    def mostly_greedy(obs, environment):
        return random_valid(obs, environment) if rng.random() < 0.1 else greedy(obs, environment.unwrapped)

    bare, _ = steps_per_second(lambda: gym.make(args.env_id), mostly_greedy, args.seconds)
    wrapped, n = steps_per_second(lambda: GreedyValue(gym.make(args.env_id)), mostly_greedy, args.seconds)
    print(f"{'  mostly greedy':<28} {bare:10.0f} steps/s")
    print(f"{'  mostly greedy, GreedyValue':<28} {wrapped:10.0f} steps/s  ({n} steps)")
    print(f"{'  ratio (GreedyValue / bare)':<28} {wrapped / bare:10.2f}")
    print(f"{'  reset':<28} {reset_milliseconds(args.env_id):10.2f} ms")
    deep, lookahead = copy_milliseconds(args.env_id)
    print(f"{'  copy.deepcopy':<28} {deep:10.3f} ms")
    print(f"{'  lookahead_copy':<28} {lookahead:10.3f} ms")
    print(f"{'  ratio (lookahead / deep)':<28} {lookahead / deep:10.2f}")
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
