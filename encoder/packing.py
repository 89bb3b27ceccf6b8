"""The fast path: a padded batch of graphs as one graph of disjoint parts, rows for real nodes only.

The padded layout [B,N,D] (the code to read: ``EncoderLayer``, ``Encoder``, ``MultiHeadAttention``,
``policy.GraphTrunk``) pads every graph to the batch's largest, and every row-wise layer
(projections, LayerNorm, feed-forward) computes the padding rows too; with graphs of 18 to 120
nodes a PPO minibatch is a fifth padding even in size buckets. A packed batch keeps only the real
nodes, R rows [1,R,D] (PyG's batching: the graphs are disconnected parts of one graph), and says
who attends to whom with ``Neighborhoods``, the allowed pairs as lists over rows. Only the
compiled kernel attends over such lists (``encoder.neighbor_kernel.neighbor_rows``), so the
model packs where it would take the kernel anyway (``Encoder.packs``), and this file holds all of
the packed computation, each piece entered from one line of the padded code:

    MultiHeadAttention.forward  -> attend_rows    (a ``Neighborhoods`` mask)
    Encoder.forward             -> encoder_rows   (then ``encoder.sparse.from_pyg_nodes`` pads back)
    GraphTrunk.forward          -> trunk_rows     (decoder and candidates read the rows directly)

A real node's output is the padded path's up to float rounding (tests/encoder/test_packing.py,
tests/test_policy.py). Shape legend: B batch, N nodes, R real nodes of the batch, E allowed pairs,
D embedding, H heads, d head dim, K candidate slots.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from encoder.masking import check_adjacency
from encoder.neighbor_kernel import neighbor_rows


@dataclass(frozen=True)
class Neighborhoods:
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


def pack(h: Tensor, adjacency: Tensor, node_mask: Tensor) -> tuple[Tensor, Neighborhoods]:
    """The real nodes of a padded batch as rows, and the adjacency's pairs between them.

    h [B,N,D], adjacency bool [B,N,N] (True: node i attends to node j), node_mask bool [B,N]
    -> (x [1,R,D], ``Neighborhoods``). A pair that involves a padding node is dropped, as the
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
    return h[node_mask].unsqueeze(0), Neighborhoods(offsets, keys, graph_rows)


def graph_attention(neighborhoods: Neighborhoods, n_graphs: int) -> Neighborhoods:
    """Lists for one query row per graph (row b: graph b's current node) that attends to every real
    row of its graph, from ``pack``'s lists of ``n_graphs`` graphs (rows ``pad_rows`` added after
    them are nobody's keys). The decoder's mask, [B,1,N] = ``node_mask`` in the padded layout."""
    starts = neighborhoods.graph_rows[: n_graphs + 1]  # graph b's rows are starts[b] .. starts[b + 1] - 1
    every_row = torch.arange(int(starts[-1]), device=starts.device)
    return Neighborhoods(starts, every_row, torch.arange(n_graphs + 1, device=starts.device))


ROW_QUANTUM = 256
"""A packed batch whose products run in reduced precision gets rows up to a multiple of this (``pad_rows``)."""


def pad_rows(x: Tensor, neighborhoods: Neighborhoods, quantum: int) -> tuple[Tensor, Neighborhoods]:
    """x [1,R,D] and its lists with zero rows added up to a multiple of ``quantum`` rows: the added
    rows attend to nothing and nothing attends to them (a graph of their own), so the real rows'
    outputs are unchanged, and the caller drops the added rows after the layers.

    Why: bf16 products on the CPU go to oneDNN, which builds a kernel for every new matrix shape
    and keeps it. A packed batch's R differs in nearly every minibatch, so without this a bf16
    training keeps building kernels and its update slows as it goes (docs/performance.md).
    float32 products (MKL) do not depend on the shape this way, and are left unpadded.
    """
    R = x.shape[1]
    extra = -R % quantum
    if not extra:
        return x, neighborhoods
    rows = torch.cat([x, x.new_zeros(1, extra, x.shape[2])], dim=1)  # [1,R+extra,D]
    offsets = torch.cat([neighborhoods.offsets, neighborhoods.offsets[-1:].expand(extra)])  # no keys
    graph_rows = torch.cat([neighborhoods.graph_rows, neighborhoods.graph_rows.new_tensor([R + extra])])
    return rows, Neighborhoods(offsets, neighborhoods.keys, graph_rows)


def attend_rows(attention: nn.Module, x: Tensor, memory: Tensor, neighborhoods: Neighborhoods) -> Tensor:
    """``MultiHeadAttention`` ``attention`` from a packed batch's query rows x [1,Rq,D] to its key
    rows memory [1,Rk,D] (``memory`` is ``x`` in self-attention) -> [1,Rq,D], by the kernel."""
    Rq, Rk = x.shape[1], memory.shape[1]
    rows = x.squeeze(0)  # [Rq,D]: a view whose backward is a view (x[0]'s fills a zero [1,Rq,D] and copies)
    key_rows = rows if memory is x else memory.squeeze(0)  # [Rk,D]
    H, d = attention.n_heads, attention.head_dim
    Q = attention.w_query(rows).view(Rq, H, d)
    K, V = (w(key_rows).view(Rk, H, d) for w in (attention.w_key, attention.w_value))
    heads = neighbor_rows(Q, K, V, neighborhoods.offsets, neighborhoods.keys, neighborhoods.graph_rows,
                           attention.norm_factor)  # [Rq,H,d]
    return attention.w_out(heads.reshape(1, Rq, attention.embed_dim))


def encoder_rows(layers: nn.ModuleList, h: Tensor, adjacency: Tensor, node_mask: Tensor
                 ) -> tuple[Tensor, Neighborhoods]:
    """The ``Encoder``'s ``layers`` over the batch's real nodes only: h [B,N,D] -> (rows [1,R',D],
    their ``Neighborhoods``); row r is the r-th real node in (graph, node) order, R = node_mask's
    count. In bf16 (or fp16) rows are added up to a multiple of ``ROW_QUANTUM`` (R' >= R;
    ``pad_rows``: oneDNN builds a kernel per matrix shape), else R' = R."""
    x, neighborhoods = pack(h, adjacency, node_mask)  # [1,R,D]
    if torch.is_autocast_enabled(x.device.type) or x.dtype in (torch.bfloat16, torch.float16):
        x, neighborhoods = pad_rows(x, neighborhoods, ROW_QUANTUM)  # a few shapes for oneDNN: [1,R',D]
    for layer in layers:
        x, _ = layer(x, neighborhoods)  # [1,R',D]
    return x, neighborhoods


def trunk_rows(trunk: nn.Module, batch, h: Tensor) -> tuple[Tensor, Tensor, None, None]:
    """``policy.GraphTrunk.forward`` over the real nodes' rows, from the embedded nodes h [B,N,D]
    of ``batch`` (a ``graph_batch.GraphBatch``): the encoder's rows (``encoder_rows``), the
    decoder's query one row per graph attending to its graph's rows (``graph_attention``), and the
    candidates gathered from the rows -> (current [B,1,D], candidates [B,K,D], None, None)."""
    B, N = batch.node_mask.shape
    check_adjacency(h, batch.adjacency)
    x, neighborhoods = encoder_rows(trunk.encoder.layers, h, batch.adjacency, batch.node_mask)  # [1,R',D]
    rows = x.squeeze(0)  # [R',D]
    row_of = row_of_nodes(batch.node_mask)  # [B*N]: the row of each real node
    first = torch.arange(B, device=h.device) * N  # [B]: where graph b's nodes start in B*N
    current = rows[row_of[first + batch.current_index]].unsqueeze(0)  # [1,B,D]
    enhanced, _ = trunk.decoder(current, x, graph_attention(neighborhoods, B))  # [1,B,D]
    current = trunk.current_embedding(torch.cat([enhanced, current], dim=-1)).transpose(0, 1)  # [B,1,D]
    candidates = rows[row_of[first.unsqueeze(1) + batch.candidates]]  # [B,K,D]; an empty slot's is masked
    return current, candidates, None, None
