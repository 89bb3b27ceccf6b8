"""The dense adjacency the encoder attends over, built from padded neighbour lists.

Observations carry ``neighbors`` [N,K] (O(N*K) per observation in rollout buffers); the
[N,N] mask exists only on the torch side, for the duration of a forward pass.
"""
from __future__ import annotations

import torch
from torch import Tensor


def adjacency_from_neighbors(neighbors: Tensor, node_mask: Tensor) -> Tensor:
    """``adjacency[b, i, j]`` True where ``j`` is in node ``i``'s neighbour list and both are real.

    Args:
        neighbors: [B,N,K] long, neighbour indices per node, -1 for an empty slot.
        node_mask: [B,N] bool, True for a real node.

    Returns:
        [B,N,N] bool. A padding node's row is all False, so attention gives it zeros.
    """
    B, N, K = neighbors.shape
    # An index >= N points past the (possibly trimmed) padding, like -1: no edge.
    valid = (neighbors >= 0) & (neighbors < N) & node_mask.unsqueeze(-1)  # [B,N,K]
    # Empty slots write into a spare column N, dropped below, so one scatter does the lot.
    columns = torch.where(valid, neighbors, N)
    adjacency = torch.zeros(B, N, N + 1, dtype=torch.bool, device=neighbors.device)
    adjacency.scatter_(2, columns, True)
    return adjacency[..., :N] & node_mask.unsqueeze(1)  # a neighbour that is padding is dropped
