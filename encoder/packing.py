"""A padded batch of graphs as one graph of disjoint parts: rows for real nodes only.

The padded layout [B,N,D] pads every graph to the batch's largest, and every row-wise layer
(projections, LayerNorm, feed-forward) computes the padding rows too; with graphs of 18 to 120
nodes a PPO minibatch is a fifth padding even in size buckets, and each bucket is another call.
A packed batch keeps only the real nodes, R rows [1,R,D] (PyG's batching: the graphs are
disconnected parts of one graph), and says who attends to whom with ``Neighbourhoods``, the
allowed pairs as lists over rows. Only the compiled kernel attends over such lists
(``encoder.neighbour_kernel.neighbour_rows``), so the ``Encoder`` packs where it would take the
kernel anyway; ``encoder.sparse.from_pyg_nodes`` puts the rows back, or the policy's decoder reads
them as they are (``graph_attention``, ``policy.GraphTrunk``). A real node's output is the padded
path's up to float rounding (tested).

Shape legend: B batch, N nodes, R real nodes of the batch, E allowed pairs, D embedding.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor


@dataclass(frozen=True)
class Neighbourhoods:
    """The allowed (query, key) pairs of a packed batch, as CSR lists over its rows.

    Query row r may attend to key rows ``keys[offsets[r]:offsets[r + 1]]`` (ascending, all of its
    own graph); ``graph_rows`` [B+1] is where each graph's query rows start, and the end. In
    self-attention the query rows are the key rows (``pack``); the decoder's one query row a graph
    attends to all of its graph's rows (``graph_attention``).
    """

    offsets: Tensor
    """[Rq+1] long."""
    keys: Tensor
    """[E] long."""
    graph_rows: Tensor
    """[B+1] long."""


def row_of_nodes(node_mask: Tensor) -> Tensor:
    """[B*N] long: the packed row of each (graph, node) of ``node_mask`` [B,N], flattened; a real
    node's row is its rank among the real nodes in (graph, node) order (padding: meaningless)."""
    return node_mask.flatten().cumsum(0) - 1


def pack(h: Tensor, adjacency: Tensor, node_mask: Tensor) -> tuple[Tensor, Neighbourhoods]:
    """The real nodes of a padded batch as rows, and the adjacency's pairs between them.

    h [B,N,D], adjacency bool [B,N,N] (True: node i attends to node j), node_mask bool [B,N]
    -> (x [1,R,D], ``Neighbourhoods``). A pair that involves a padding node is dropped, as the
    padded path's attention gives padding nothing and takes nothing from it.
    """
    B, N, _ = h.shape
    row_of = row_of_nodes(node_mask)  # [B*N]
    b, i, j = adjacency.nonzero(as_tuple=True)  # row-major: queries in order, keys ascending within each
    real = node_mask[b, i] & node_mask[b, j]  # [E]
    queries, keys = row_of[(b * N + i)[real]], row_of[(b * N + j)[real]]
    zero = torch.zeros(1, dtype=torch.long, device=h.device)
    graph_rows = torch.cat([zero, node_mask.sum(1).cumsum(0)])
    offsets = torch.cat([zero, torch.bincount(queries, minlength=int(graph_rows[-1])).cumsum(0)])
    return h[node_mask].unsqueeze(0), Neighbourhoods(offsets, keys, graph_rows)


def graph_attention(neighbourhoods: Neighbourhoods, n_graphs: int) -> Neighbourhoods:
    """Lists for one query row per graph (row b: graph b's current node) that attends to every real
    row of its graph, from ``pack``'s lists of ``n_graphs`` graphs (rows ``pad_rows`` added after
    them are nobody's keys). The decoder's mask, [B,1,N] = ``node_mask`` in the padded layout."""
    starts = neighbourhoods.graph_rows[: n_graphs + 1]  # graph b's rows are starts[b] .. starts[b + 1] - 1
    every_row = torch.arange(int(starts[-1]), device=starts.device)
    return Neighbourhoods(starts, every_row, torch.arange(n_graphs + 1, device=starts.device))


ROW_QUANTUM = 256
"""A packed batch whose products run in reduced precision gets rows up to a multiple of this (``pad_rows``)."""


def pad_rows(x: Tensor, neighbourhoods: Neighbourhoods, quantum: int) -> tuple[Tensor, Neighbourhoods]:
    """x [1,R,D] and its lists with zero rows added up to a multiple of ``quantum`` rows: the added
    rows attend to nothing and nothing attends to them (a graph of their own), so the real rows'
    outputs are unchanged, and the caller drops the added rows after the layers.

    Why: bf16 products on the CPU go to oneDNN, which builds a kernel for every new matrix shape
    and keeps it. A packed batch's R differs in nearly every minibatch, so a bf16 training kept
    building kernels and its update slowed as it went (2.85 s to 3.7 s over 30 updates of one
    rollout); with R a multiple of 256 it stays at 2.5 s (docs/performance.md). float32 products
    (MKL) do not depend on the shape this way, and are left unpadded.
    """
    R = x.shape[1]
    extra = -R % quantum
    if not extra:
        return x, neighbourhoods
    rows = torch.cat([x, x.new_zeros(1, extra, x.shape[2])], dim=1)  # [1,R+extra,D]
    offsets = torch.cat([neighbourhoods.offsets, neighbourhoods.offsets[-1:].expand(extra)])  # no keys
    graph_rows = torch.cat([neighbourhoods.graph_rows, neighbourhoods.graph_rows.new_tensor([R + extra])])
    return rows, Neighbourhoods(offsets, neighbourhoods.keys, graph_rows)
