"""``EncoderLayer`` and ``Encoder``: pre-LayerNorm transformer blocks over the graph's nodes.

Shape legend: B batch, N nodes, D embedding, H heads.
"""
from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor, nn

from checks import check_at_least_one
from encoder.attention import MultiHeadAttention, takes_kernel
from encoder.masking import check_adjacency
from encoder.packing import Neighborhoods, encoder_rows
from encoder.sparse import from_pyg_nodes


class AttentionBlock(nn.Module):
    """The parts of a pre-LayerNorm block: LN, multi-head attention, LN, feed-forward (D -> ff_dim -> D).

    ``EncoderLayer`` and ``DecoderLayer`` build the same parts and differ in ``forward``: what the
    attention attends to. The reference names the parts ``normalization1``, ``multiHeadAttention``,
    ``normalization2`` and ``feedForward``.
    """

    def __init__(self, embed_dim: int, n_heads: int, ff_dim: int, attention_impl: str = "auto"):
        super().__init__()
        self.normalization1 = nn.LayerNorm(embed_dim)
        self.multi_head_attention = MultiHeadAttention(embed_dim, n_heads, attention_impl=attention_impl)
        self.normalization2 = nn.LayerNorm(embed_dim)
        self.feed_forward = nn.Sequential(nn.Linear(embed_dim, ff_dim), nn.ReLU(), nn.Linear(ff_dim, embed_dim))


class EncoderLayer(AttentionBlock):
    r"""One pre-LayerNorm self-attention block over graph neighbours, as the reference's ``EncoderLayer``.

    .. math::
        h' = h + \mathrm{MHA}(\mathrm{LN}_1(h), \text{adjacency}), \qquad
        \mathrm{out} = h' + \mathrm{FF}(\mathrm{LN}_2(h'))

    Shapes: h [B,N,D], adjacency bool [B,N,N] (True: node i attends to node j)
    -> ``(out [B,N,D], weights [B,H,N,N] if need_weights else None)``; or a packed batch, h
    [1,R,D] and adjacency ``Neighborhoods`` -> ``(out [1,R,D], None)`` (``encoder.packing``).
    """

    def forward(self, h: Tensor, adjacency: Tensor | Neighborhoods, need_weights: bool = False
                ) -> tuple[Tensor, Tensor | None]:
        attended, weights = self.multi_head_attention(self.normalization1(h), mask=adjacency, need_weights=need_weights)
        h = h + attended  # [B,N,D]
        h = h + self.feed_forward(self.normalization2(h))  # [B,N,D]
        return h, weights


def stack_layers(make_layer: Callable[[], nn.Module], n_layers: int) -> nn.ModuleList:
    """``n_layers`` fresh layers from ``make_layer()``; at least one."""
    check_at_least_one("n_layers", n_layers)
    return nn.ModuleList(make_layer() for _ in range(n_layers))


class Encoder(nn.Module):
    """A stack of ``n_layers`` ``EncoderLayer``s: each node mixes information from its graph neighbours.

    After ``n_layers`` layers a node's output depends only on nodes within ``n_layers`` hops.

    Args:
        embed_dim: D. n_heads: H (divides D). n_layers: depth. ff_dim: feed-forward width.
        attention_impl: one of ``encoder.attention.ATTENTION_IMPLS``.

    Shapes:
        h [B,N,D], adjacency bool [B,N,N], node_mask bool [B,N] or None -> ``(out [B,N,D],
        weights)``: ``weights`` is None, or with ``need_weights`` a list of ``n_layers`` tensors
        [B,H,N,N] (rows sum to 1 over allowed keys, 0 for padding).

    The fast path: given ``node_mask``, where the attention would take the compiled kernel
    (``packs``: on the CPU, sparse graphs), the layers run on the real nodes alone, packed
    (``encoder.packing.encoder_rows``): the same outputs for real nodes, up to float rounding,
    and zeros at padding, without computing the padding rows.
    """

    def __init__(self, embed_dim: int, n_heads: int, n_layers: int, ff_dim: int, attention_impl: str = "auto"):
        super().__init__()
        self.attention_impl = attention_impl
        self.layers = stack_layers(lambda: EncoderLayer(embed_dim, n_heads, ff_dim, attention_impl), n_layers)

    def forward(self, h: Tensor, adjacency: Tensor, need_weights: bool = False, node_mask: Tensor | None = None
                ) -> tuple[Tensor, list[Tensor] | None]:
        check_adjacency(h, adjacency)
        if node_mask is not None and self.packs(adjacency, h.device, need_weights):  # the fast path
            rows, _ = encoder_rows(self.layers, h, adjacency, node_mask)  # [1,R',D]: the real nodes
            return from_pyg_nodes(rows[0, :int(node_mask.sum())], node_mask), None  # [B,N,D]
        per_layer = []
        for layer in self.layers:
            h, weights = layer(h, adjacency, need_weights)  # [B,N,D]
            per_layer.append(weights)
        return h, (per_layer if need_weights else None)

    def packs(self, adjacency: Tensor, device: torch.device, need_weights: bool = False) -> bool:
        """Whether the layers run packed over ``adjacency`` [B,N,N] (``takes_kernel``)."""
        return takes_kernel(self.attention_impl, adjacency, device, need_weights)
