"""Benchmark: a PPO minibatch through PolicyNet in one call vs. in slices of similar graph size.

    python -m experiments.size_buckets [--batch 256] [--buckets 1 2 4 8] [--repeats 8]

A minibatch of ``--batch`` observations drawn at random from 4x as many nearest-frontier steps on
the default env (32x32 maps, N_max 64), so early, middle and late states mix as in a shuffled
rollout, and evaluated with ``graph_batch.forward_observations`` as ``learning.ppo.ppo_update`` does. Prints milliseconds per forward + backward (median of
``--repeats``; rounds alternate, so drift on a shared machine hits every setting alike) and each
setting's speed-up over one call.
"""
from __future__ import annotations

import argparse
from functools import partial

import numpy as np
import torch

from bench.attention_speed import time_step
from config import load_config
from experiments.padding_trim import collect
from graph_batch import forward_observations
from policy import build_policy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--buckets", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--repeats", type=int, default=8)
    args = parser.parse_args()
    config = load_config("configs/default.yaml")
    pool = collect(4 * args.batch, config.env)
    pick = np.random.default_rng(0).permutation(4 * args.batch)[: args.batch]
    obs = {key: torch.as_tensor(value[pick]) for key, value in pool.items()}
    real = obs["node_mask"].sum(-1).float()
    print(f"batch {args.batch}, N_max {obs['node_mask'].shape[1]}, real nodes per observation: "
          f"median {real.median():.0f}, max {real.max():.0f}; torch threads {torch.get_num_threads()}")
    torch.manual_seed(0)
    policy = build_policy(config)
    for _ in range(2):
        ms = {b: 1e3 * time_step(partial(forward_observations, policy, size_buckets=b), obs, args.repeats, train=True)
              for b in args.buckets}
        print("   ".join(f"buckets {b}: {t:6.1f} ms (x{ms[args.buckets[0]] / t:.2f})" for b, t in ms.items()))


if __name__ == "__main__":
    main()
