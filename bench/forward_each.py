"""One forward pass per observation (``graph_batch.forward_each``) against one batched call.

    python -m bench.forward_each [--config configs/default.yaml] [--steps 40] [--repeats 50]

On the observations of ``env.num_envs`` envs ``--steps`` random moves into their episodes,
prints milliseconds per step for the batched ``policy(collate(obs))`` and for one call per
observation (what ``forward_each`` does, always on one thread), each on 1 and on 2 torch threads,
and how far their logits lie apart: what a rollout pays for not depending on how the envs are
split across processes (``docs/performance.md``).
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from config import load_config
from graph_batch import collate
from policy import build_policy
from rl.envs import make_envs


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
    args = parser.parse_args(argv)
    config = load_config(args.config)
    torch.manual_seed(0)
    policy = build_policy(config).eval()
    envs = make_envs(config.env, config.seed, vector="sync")
    obs, _ = envs.reset()
    rng = np.random.default_rng(0)
    for _ in range(args.steps):
        obs, *_ = envs.step(np.array([int(rng.choice(np.flatnonzero(mask))) for mask in obs["action_mask"]]))
    envs.close()
    singles = [{key: value[i:i + 1] for key, value in obs.items()} for i in range(len(obs["current_index"]))]

    def one_per_observation() -> torch.Tensor:
        return torch.cat([policy(collate(single))[0] for single in singles])

    with torch.no_grad():
        batched, each = {}, {}
        for threads in (1, 2):
            torch.set_num_threads(threads)
            batched[threads], each[threads] = policy(collate(obs))[0], one_per_observation()
            print(f"{threads} thread(s): batched {milliseconds(lambda: policy(collate(obs)), args.repeats):.2f} ms, "
                  f"one per observation {milliseconds(one_per_observation, args.repeats):.2f} ms per step of "
                  f"{len(singles)} envs")
    print(f"max |logit difference|: batched vs one per observation {(batched[1] - each[1]).abs().max():.1e}; "
          f"one per observation on 1 vs 2 threads {(each[1] - each[2]).abs().max():.1e}")


if __name__ == "__main__":
    main()
