"""Forward passes in groups of envs (``graph_batch.forward_groups``, ``env.forward_group``) against one per env.

    python -m bench.forward_groups [--config configs/default.yaml] [--steps 40] [--repeats 50]
        [--groups 1 2 4 8] [key=value ...]

On the observations of ``env.num_envs`` envs ``--steps`` random moves into their episodes,
prints milliseconds per step (all envs) for each group size, on one torch thread as the
collectors run them, and for one batched call on 2 threads; and how far each one's logits lie
from one pass per env (groups of 1, ``forward_each``): what a rollout pays for not depending on
how the envs are split across processes (``docs/performance.md``). Run it alone.
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from config import load_config
from graph_batch import collate, consecutive_groups, forward_groups
from learning.envs import make_envs
from policy import build_policy


def milliseconds(call, repeats: int) -> float:
    call()  # warm-up
    start = time.perf_counter()
    for _ in range(repeats):
        call()
    return (time.perf_counter() - start) / repeats * 1e3


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="configs/default.yaml")
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--groups", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("overrides", nargs="*", help="dotted key=value overrides of the config")
    args = parser.parse_args(argv)
    if min(args.groups) < 1:
        parser.error(f"--groups must be sizes >= 1, got {args.groups}")
    config = load_config(args.config, args.overrides)
    torch.manual_seed(0)
    policy = build_policy(config).eval()
    envs = make_envs(config.env, config.seed)
    obs, _ = envs.reset()
    rng = np.random.default_rng(0)
    for _ in range(args.steps):
        obs, *_ = envs.step(np.array([int(rng.choice(np.flatnonzero(mask))) for mask in obs["action_mask"]]))
    envs.close()
    positions = range(len(obs["current_index"]))
    print(f"{config.env.num_envs} envs, {args.steps} random moves in: "
          f"{obs['node_mask'].sum(axis=1).mean():.0f} nodes on average")
    with torch.no_grad():
        each = forward_groups(policy, obs, consecutive_groups(positions, 1))[0]
        for size in args.groups:
            groups = consecutive_groups(positions, size)
            logits = forward_groups(policy, obs, groups)[0]
            print(f"groups of {size}: {milliseconds(lambda: forward_groups(policy, obs, groups), args.repeats):.2f} "
                  f"ms per step, 1 thread; max |logit difference| from groups of 1 {(logits - each).abs().max():.1e}")
        torch.set_num_threads(2)
        two = policy(collate(obs))[0]
        print(f"one batched call on 2 threads: {milliseconds(lambda: policy(collate(obs)), args.repeats):.2f} ms per "
              f"step; max |logit difference| from groups of 1 {(two - each).abs().max():.1e}")


if __name__ == "__main__":
    main()
