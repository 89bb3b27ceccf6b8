"""Benchmark: this project's ``Encoder`` against ``torch.nn.TransformerEncoder``, forward + backward.

    python -m bench.encoder_vs_torch [--nodes 64 128 256] [--batch 32] [--rounds 5] [--impl auto] [--profile]

Both stacks get the same sizes (D 128, 8 heads, 3 layers, feed-forward 512, pre-LayerNorm, ReLU,
no dropout), the same input and the same boolean neighbour mask (``--neighbors`` slots per node,
self included, as the env's graphs; every node real, so torch's kernels meet no fully masked
row). torch's mask means the opposite (True = blocked), so it gets the negation. Each round times
both (median of ``--repeats`` passes after two warm-ups) and the ratio of graphs per second,
ours / torch's, is reported per round and as the median over rounds: the machine is shared, so
only ratios taken side by side compare. ``--profile`` also prints each stack's operators by
their share of CPU time (``torch.profiler``) and the ceiling: the ratio ours would reach if
everything but the linear layers' matrix products (the same in both stacks) took no time. Run it
alone.
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile

from bench.synthetic import random_graph
from encoder import Encoder
from encoder.adjacency import adjacency_from_neighbors
from encoder.attention import ATTENTION_IMPLS

SIZES = dict(embed_dim=128, n_heads=8, n_layers=3, ff_dim=512)


def torch_encoder() -> nn.Module:
    layer = nn.TransformerEncoderLayer(SIZES["embed_dim"], SIZES["n_heads"], SIZES["ff_dim"], dropout=0.0,
                                       batch_first=True, norm_first=True)
    return nn.TransformerEncoder(layer, SIZES["n_layers"], enable_nested_tensor=False)


def seconds_per_pass(run, repeats: int) -> float:
    """Median seconds of ``run()`` (a forward and a backward) over ``repeats`` passes after two warm-ups."""
    times = []
    for _ in range(repeats + 2):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times[2:])


MATRIX_PRODUCTS = ("aten::mm", "aten::addmm", "aten::bmm")
"""The linear layers' products: the same in both stacks, so they bound what the rest can gain."""


def operator_shares(run, repeats: int) -> list[tuple[str, float]]:
    """Every operator with its share of the CPU time (its own, ``torch.profiler``) over ``repeats``
    calls of ``run()``, largest first."""
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(repeats):
            run()
    events = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
    total = sum(e.self_cpu_time_total for e in events)
    return [(e.key, e.self_cpu_time_total / total) for e in events]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[64, 128, 256])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--neighbors", type=int, default=9)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--impl", default="auto", choices=ATTENTION_IMPLS,
                        help="our attention implementation (default: the default path, auto)")
    parser.add_argument("--profile", action="store_true", help="also print where each stack spends its time")
    args = parser.parse_args()
    print(f"threads={torch.get_num_threads()} torch={torch.__version__} batch={args.batch} sizes={SIZES} "
          f"ours={args.impl}")
    torch.manual_seed(0)
    ours, theirs = Encoder(**SIZES, attention_impl=args.impl), torch_encoder()
    for n in args.nodes:
        neighbors, node_mask = random_graph(args.batch, n, args.neighbors, seed=0, n_real=[n] * args.batch)
        adjacency = adjacency_from_neighbors(neighbors, node_mask)  # [B,N,N] True = may attend
        blocked = (~adjacency).repeat_interleave(SIZES["n_heads"], dim=0)  # torch's [B*H,N,N], True = may not
        h = torch.randn(args.batch, n, SIZES["embed_dim"], requires_grad=True)

        def run_ours():
            ours(h, adjacency)[0].sum().backward()

        def run_theirs():
            theirs(h, mask=blocked).sum().backward()

        ratios = []
        for _ in range(args.rounds):
            ours_s, theirs_s = seconds_per_pass(run_ours, args.repeats), seconds_per_pass(run_theirs, args.repeats)
            ratios.append(theirs_s / ours_s)
        if args.profile:
            for name, run in (("ours", run_ours), ("torch", run_theirs)):
                shares = operator_shares(run, args.repeats)
                print(f"N={n} {name}: share of CPU time per operator, forward + backward, {args.repeats} passes")
                print("\n".join(f"  {share:6.1%}  {key}" for key, share in shares[:6]))
                if name == "ours":
                    products = sum(share for key, share in shares if key in MATRIX_PRODUCTS)
                    print(f"  matrix products {products:.0%} of ours: were everything else free, ours would be "
                          f"{statistics.median(ratios) / products:.2f}x torch (the ceiling)")
        print(f"N={n:>4}: ours {args.batch / ours_s:7.1f} graphs/s, torch {args.batch / theirs_s:7.1f} graphs/s "
              f"(last round); ours / torch per round {' '.join(f'{r:.2f}' for r in ratios)}, "
              f"median {statistics.median(ratios):.2f}x", flush=True)


if __name__ == "__main__":
    main()
