"""Benchmark: the three attention implementations inside a whole ``PolicyNet``, forward + backward.

    python -m bench.attention_speed [--batch 64] [--nodes 64 256] [--repeats 20]

Prints milliseconds per step for each implementation and its speed relative to ``reference``
in the same run (these machines are shared, so only ratios from one run compare).
"""
from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import torch

from bench.synthetic import random_graph
from config import ModelConfig
from encoder.attention import ATTENTION_IMPLS
from env.observation import N_NODE_FEATURES
from graph_batch import collate
from policy import PolicyNet

SIZES = {"small": dict(embed_dim=64, n_heads=4, n_layers=3, ff_dim=256),
         "reference": dict(embed_dim=128, n_heads=8, n_layers=6, ff_dim=512)}


def make_batch(B: int, N: int, K: int) -> dict[str, torch.Tensor]:
    """A batch of graphs with every node real and K neighbour slots, like a full observation."""
    neighbors, node_mask = random_graph(B, N, K, seed=0, n_real=[N] * B)
    return {
        "node_features": torch.rand(B, N, N_NODE_FEATURES),
        "node_mask": node_mask,
        "neighbors": neighbors,
        "current_index": torch.zeros(B, dtype=torch.long),
        "action_mask": neighbors[:, 0] >= 0,
    }


def time_step(policy: Callable[[Any], tuple[torch.Tensor, torch.Tensor]], batch: Any, repeats: int,
              train: bool) -> float:
    """Median seconds of one forward (+ backward when ``train``) pass of ``policy(batch) -> (logits,
    value)``: a ``PolicyNet`` on a ``GraphBatch``, or a function that collates observations and runs one."""
    times = []
    for _ in range(repeats + 2):  # two warm-up passes
        start = time.perf_counter()
        if train:
            logits, value = policy(batch)
            (logits.logsumexp(-1).sum() + value.sum()).backward()
        else:
            with torch.no_grad():
                policy(batch)
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return sorted(times[2:])[repeats // 2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--nodes", type=int, nargs="+", default=[64, 256])
    parser.add_argument("--neighbors", type=int, default=9)
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    print(f"device={device} threads={torch.get_num_threads()} torch={torch.__version__} batch={args.batch}")
    print(f"{'sizes':>9} {'N':>5} {'pass':>8} " + " ".join(f"{impl + ' ms':>13}" for impl in ATTENTION_IMPLS)
          + "   speed-up vs reference")
    for size_name, sizes in SIZES.items():
        for N in args.nodes:
            batch = collate(make_batch(args.batch, N, args.neighbors), device)  # the model alone is timed
            for train in (False, True):
                ms = {}
                for impl in ATTENTION_IMPLS:
                    torch.manual_seed(0)
                    policy = PolicyNet(ModelConfig(**sizes, attention_impl=impl)).to(device)
                    ms[impl] = 1e3 * time_step(policy, batch, args.repeats, train)
                ratios = " ".join(f"{impl} x{ms['reference'] / ms[impl]:.2f}" for impl in ATTENTION_IMPLS[1:])
                print(f"{size_name:>9} {N:>5} {'fwd+bwd' if train else 'fwd':>8} "
                      + " ".join(f"{ms[impl]:>13.1f}" for impl in ATTENTION_IMPLS) + f"   {ratios}", flush=True)


if __name__ == "__main__":
    main()
