"""Benchmark: where the neighbour kernel beats SDPA, by graph size and degree (attention alone).

    python -m experiments.neighbor_crossover [--nodes 16 32 64 128 256] [--degrees 4 9 20 32 64] [--rounds 2]

For each N and each degree below N, one batch of about 4,096 query nodes (8 heads of 16, the
reference's), each node allowed exactly that many keys picked at random, every node real. Both
``neighbor_attention`` and ``sdpa_attention`` run forward + backward on the same Q, K, V and
mask; each round prints the speed of the kernel over SDPA (median of ``--repeats`` passes). The
ratio falls as the degree approaches N: ``encoder.attention.NEIGHBORS_FROM_KEYS_PER_NEIGHBOR``
is where ``auto`` switches. Run it alone.
"""
from __future__ import annotations

import argparse

import torch

from bench.encoder_vs_torch import seconds_per_pass
from encoder.attention import neighbor_attention, sdpa_attention

HEADS, HEAD_DIM, QUERIES = 8, 16, 4096


def random_mask(B: int, n: int, degree: int, generator: torch.Generator) -> torch.Tensor:
    """[B,n,n] bool with exactly ``degree`` True per row, at random places."""
    keys = torch.rand(B, n, n, generator=generator).argsort(dim=-1)[..., :degree]
    return torch.zeros(B, n, n, dtype=torch.bool).scatter_(2, keys, True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[16, 32, 64, 128, 256])
    parser.add_argument("--degrees", type=int, nargs="+", default=[4, 9, 20, 32, 64])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    print(f"threads={torch.get_num_threads()} torch={torch.__version__} heads={HEADS}x{HEAD_DIM} "
          f"queries per batch={QUERIES}")
    generator = torch.Generator().manual_seed(0)
    for n in args.nodes:
        B = max(QUERIES // n, 1)
        for degree in (d for d in args.degrees if d <= n):
            mask = random_mask(B, n, degree, generator)
            Q, K, V, grad = (torch.randn(B, HEADS, n, HEAD_DIM, generator=generator) for _ in range(4))
            Q, K, V = (x.transpose(1, 2).contiguous().transpose(1, 2).requires_grad_() for x in (Q, K, V))

            def timed(attend):
                return seconds_per_pass(lambda: attend(Q, K, V, mask, 0.25)[0].backward(grad), args.repeats)

            ratios = [timed(sdpa_attention) / timed(neighbor_attention) for _ in range(args.rounds)]
            print(f"N={n:>4} degree={degree:>3} (N / degree {n / degree:4.1f}): kernel speed over SDPA "
                  + " ".join(f"{r:.2f}" for r in ratios), flush=True)


if __name__ == "__main__":
    main()
