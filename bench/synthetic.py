"""Synthetic padded graphs in the observation layout, for tests and benchmarks."""
from __future__ import annotations

import torch


def random_graph(B: int, N: int, K: int, seed: int, n_real: list[int] | None = None):
    """A batch of padded graphs: ``(neighbors [B,N,K] long, node_mask [B,N] bool)``.

    Real nodes are a prefix of each graph (``n_real[b]`` of them, random by default). Slot 0
    holds the node itself; other slots hold random real nodes or -1 (empty).
    """
    g = torch.Generator().manual_seed(seed)
    if n_real is None:
        n_real = torch.randint(2, N + 1, (B,), generator=g).tolist()
    node_mask = torch.arange(N).unsqueeze(0) < torch.tensor(n_real).unsqueeze(1)  # [B,N]
    neighbors = torch.full((B, N, K), -1, dtype=torch.long)
    for b, n in enumerate(n_real):
        neighbors[b, :n, 0] = torch.arange(n)
        others = torch.randint(0, n, (n, K - 1), generator=g)
        empty = torch.rand(n, K - 1, generator=g) < 0.3
        neighbors[b, :n, 1:] = torch.where(empty, torch.full_like(others, -1), others)
    return neighbors, node_mask
