"""Benchmark: PolicyNet on real observations, with the trailing padding trimmed (as it runs) vs. not.

    python -m experiments.padding_trim [--batch 256] [--repeats 10]

Observations come from nearest-frontier episodes on the default env (map 32x32, N_max 64), so
early, middle and late states are all present, as in a PPO minibatch. "untrimmed" marks the last
padding slot of one observation as a real node, which forces the network to attend over all N_max
nodes: the cost of the code before trimming. Prints milliseconds per forward + backward and the ratio.
"""
from __future__ import annotations

import argparse
from functools import partial

import numpy as np
import torch

from bench.attention_speed import time_step
from config import EnvConfig, load_config
from env.baselines import nearest_frontier
from graph_batch import forward_observations
from learning.envs import make_env
from policy import build_policy


def collect(batch: int, env_config: EnvConfig) -> dict[str, np.ndarray]:
    """``batch`` observations from consecutive nearest-frontier episodes."""
    env = make_env(env_config)
    observations, seed = [], 0
    while len(observations) < batch:
        obs, _ = env.reset(seed=seed)
        done = False
        while not done and len(observations) < batch:
            observations.append(obs)
            obs, _, terminated, truncated, _ = env.step(nearest_frontier(obs, env.unwrapped))
            done = terminated or truncated
        seed += 1
    return {key: np.stack([o[key] for o in observations]) for key in observations[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    config = load_config("configs/default.yaml")
    obs = collect(args.batch, config.env)
    untrimmed = {key: value.copy() for key, value in obs.items()}
    untrimmed["node_mask"][0, -1] = 1
    real = obs["node_mask"].sum(1)
    print(f"batch {args.batch}, N_max {obs['node_mask'].shape[1]}, real nodes per observation: "
          f"median {np.median(real):.0f}, max {real.max()}; torch threads {torch.get_num_threads()}")
    torch.manual_seed(0)
    policy = partial(forward_observations, build_policy(config))
    for _ in range(2):  # alternate, so drift on a shared machine hits both alike
        trimmed_ms = 1e3 * time_step(policy, obs, args.repeats, train=True)
        untrimmed_ms = 1e3 * time_step(policy, untrimmed, args.repeats, train=True)
        print(f"fwd+bwd  trimmed {trimmed_ms:7.1f} ms   untrimmed {untrimmed_ms:7.1f} ms   speed-up x{untrimmed_ms / trimmed_ms:.2f}")


if __name__ == "__main__":
    main()
