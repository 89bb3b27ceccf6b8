"""Attention over an edge list with PyG utilities, and converters from the padded layout.

The dense paths cost O(N^2) per graph whatever the graph's degree; this one costs O(E). It is
also an independent cross-check: it shares no softmax or masking code with the dense paths.
PyG's convention is kept: ``edge_index[0]`` is the source (the key j), ``edge_index[1]`` the
target (the query i), and messages flow j -> i. PyG is imported by the functions that use it: its
import takes seconds (it loads ``torch._dynamo``), which every process that builds the model (an
evaluation, each Ray rollout worker, each test subprocess) would otherwise pay for a path it
rarely takes.

Shape legend: B batch, N nodes, K neighbour slots, E edges, H heads, d head dim, F features.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import Tensor

if TYPE_CHECKING:
    from torch_geometric.data import Batch


def edge_attention(
    Q: Tensor, K: Tensor, V: Tensor, edge_index: Tensor, norm_factor: float
) -> tuple[Tensor, Tensor]:
    r"""Per-head attention of each target over its incoming edges.

    .. math::
        \alpha_{ji} = \mathrm{softmax}_{j \in \mathcal{N}(i)}\big(\langle Q_i, K_j\rangle \cdot
        \mathrm{norm\_factor}\big), \qquad \mathrm{out}_i = \sum_{j \in \mathcal{N}(i)} \alpha_{ji} V_j

    Args:
        Q: [Nq_total,H,d] query nodes; K, V: [Nk_total,H,d] key nodes.
        edge_index: [2,E] long, (key index, query index) per edge.

    Returns:
        ``(out [Nq_total,H,d], alpha [E,H])``; a query with no incoming edge gets zeros.
    """
    from torch_geometric.utils import scatter
    from torch_geometric.utils import softmax as segment_softmax

    key_index, query_index = edge_index
    score = (Q[query_index] * K[key_index]).sum(dim=-1) * norm_factor  # [E,H]
    alpha = segment_softmax(score, query_index, num_nodes=Q.shape[0])  # [E,H]
    messages = alpha.unsqueeze(-1) * V[key_index]  # [E,H,d]
    out = scatter(messages, query_index, dim=0, dim_size=Q.shape[0], reduce="sum")
    return out, alpha


def edges_from_mask(mask: Tensor | None, B: int, Nq: int, Nk: int) -> tuple[Tensor, Tensor]:
    """Flattened (query, key) indices of the True entries of ``mask`` [B,Nq,Nk] (all if None).

    Query ``i`` of graph ``b`` becomes ``b * Nq + i``, key ``j`` becomes ``b * Nk + j``.
    """
    if mask is None:
        b, i, j = torch.meshgrid(torch.arange(B), torch.arange(Nq), torch.arange(Nk), indexing="ij")
        b, i, j = b.flatten(), i.flatten(), j.flatten()
    else:
        b, i, j = mask.nonzero(as_tuple=True)
    return b * Nq + i, b * Nk + j


def sparse_attention(Q: Tensor, K: Tensor, V: Tensor, mask: Tensor | None, norm_factor: float,
                     need_weights: bool = False) -> tuple[Tensor, Tensor | None]:
    """``edge_attention`` over the True entries of ``mask``, for ``MultiHeadAttention``'s sparse impl.

    ``Q`` [B,H,Nq,d], ``K`` and ``V`` [B,H,Nk,d], ``mask`` [B,Nq,Nk] bool or None (all pairs).
    Returns ``(heads [B,H,Nq,d], weights [B,H,Nq,Nk] or None)``.
    """
    B, H, Nq, d = Q.shape
    Nk = K.shape[2]
    query_index, key_index = edges_from_mask(mask, B, Nq, Nk)
    edge_index = torch.stack([key_index, query_index]).to(Q.device)
    out, alpha = edge_attention(_as_nodes(Q), _as_nodes(K), _as_nodes(V), edge_index, norm_factor)
    heads = out.view(B, Nq, H, d).transpose(1, 2)  # [B,H,Nq,d]
    if not need_weights:
        return heads, None
    weights = Q.new_zeros(B, H, Nq, Nk)
    b, i, j = query_index // Nq, query_index % Nq, key_index % Nk
    weights[b, :, i, j] = alpha
    return heads, weights


def _as_nodes(x: Tensor) -> Tensor:
    """[B,H,N,d] -> [B*N,H,d]: one row per node of the flattened batch."""
    B, H, N, d = x.shape
    return x.transpose(1, 2).reshape(B * N, H, d)


def edge_index_from_neighbors(neighbors: Tensor, node_mask: Tensor) -> Tensor:
    """Edge list [2,E] of a padded batch, over flattened nodes ``b * N + i``.

    ``neighbors`` [B,N,K] long (-1 = empty slot), ``node_mask`` [B,N] bool. Node ``i`` receives
    an edge from each real neighbour ``j`` in its list: query i may attend to key j. A neighbour
    listed twice gives one edge, as in the dense adjacency (a duplicate would count twice in softmax).
    """
    from torch_geometric.utils import coalesce

    B, N, K = neighbors.shape
    valid = (neighbors >= 0) & (neighbors < N) & node_mask.unsqueeze(-1)  # [B,N,K], as the dense adjacency
    b, i, k = valid.nonzero(as_tuple=True)
    j = neighbors[b, i, k]
    keep = node_mask[b, j]  # an edge to a padding node is dropped, as in the dense adjacency
    return coalesce(torch.stack([b * N + j, b * N + i])[:, keep], num_nodes=B * N)


def to_pyg_batch(node_features: Tensor, node_mask: Tensor, neighbors: Tensor) -> Batch:
    """A PyG ``Batch`` of the real nodes of a padded batch: one ``Data`` per graph.

    ``node_features`` [B,N,F], ``node_mask`` [B,N] bool, ``neighbors`` [B,N,K]. Padding nodes
    are dropped and edges renumbered; ``from_pyg_nodes`` puts node outputs back in place.
    """
    from torch_geometric.data import Batch, Data

    B, N, _ = node_features.shape
    flat_to_compact = torch.cumsum(node_mask.flatten().long(), 0) - 1  # [B*N]
    edge_index = flat_to_compact[edge_index_from_neighbors(neighbors, node_mask)]
    counts = node_mask.sum(dim=1).tolist()
    offsets = [0] + torch.cumsum(torch.tensor(counts), 0).tolist()
    graphs = []
    for b in range(B):
        lo, hi = offsets[b], offsets[b + 1]
        in_graph = (edge_index[1] >= lo) & (edge_index[1] < hi)
        graphs.append(Data(x=node_features[b][node_mask[b]], edge_index=edge_index[:, in_graph] - lo))
    return Batch.from_data_list(graphs)


def from_pyg_nodes(x: Tensor, node_mask: Tensor) -> Tensor:
    """Scatter per-node rows ``x`` [n_real,D] of ``to_pyg_batch``'s order back to [B,N,D] (zeros at padding)."""
    out = x.new_zeros(*node_mask.shape, x.shape[-1])
    out[node_mask] = x
    return out
