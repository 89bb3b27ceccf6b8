"""``EncoderLayer`` and ``Encoder``: pre-LayerNorm transformer blocks over the graph's nodes.

Shape legend: B batch, N nodes, D embedding, H heads.
"""
from __future__ import annotations

from torch import Tensor, nn

from encoder.attention import MultiHeadAttention
from encoder.masking import check_bool_mask


def feed_forward(embed_dim: int, ff_dim: int) -> nn.Sequential:
    """Position-wise feed-forward block, D -> ff_dim -> D with ReLU (the reference uses 512)."""
    return nn.Sequential(nn.Linear(embed_dim, ff_dim), nn.ReLU(), nn.Linear(ff_dim, embed_dim))


def stack_layers(make_layer, n_layers: int) -> nn.ModuleList:
    """``n_layers`` fresh layers from ``make_layer()``; at least one."""
    if n_layers < 1:
        raise ValueError(f"n_layers must be >= 1, got {n_layers}")
    return nn.ModuleList(make_layer() for _ in range(n_layers))


class AttentionBlock(nn.Module):
    """The parts every pre-LayerNorm block has: LN, multi-head attention, LN, feed-forward.

    ``EncoderLayer`` and ``DecoderLayer`` differ only in what they attend to (their ``forward``).
    """

    def __init__(self, embed_dim: int, n_heads: int, ff_dim: int, attention_impl: str = "sdpa"):
        super().__init__()
        self.normalization1 = nn.LayerNorm(embed_dim)
        self.multi_head_attention = MultiHeadAttention(embed_dim, n_heads, attention_impl=attention_impl)
        self.normalization2 = nn.LayerNorm(embed_dim)
        self.feed_forward = feed_forward(embed_dim, ff_dim)

    def feed_forward_residual(self, h: Tensor) -> Tensor:
        """h + FF(LN_2(h)): the block's second half."""
        return h + self.feed_forward(self.normalization2(h))


class EncoderLayer(AttentionBlock):
    r"""One pre-LayerNorm self-attention block, as the reference's ``EncoderLayer``.

    .. math::
        h' = h + \mathrm{MHA}(\mathrm{LN}_1(h), \text{mask}), \qquad
        \mathrm{out} = h' + \mathrm{FF}(\mathrm{LN}_2(h'))

    Shapes: h [B,N,D], adjacency bool [B,N,N] (True: node i attends to node j) -> [B,N,D].
    """

    def forward(self, h: Tensor, adjacency: Tensor, need_weights: bool = False) -> tuple[Tensor, Tensor | None]:
        attended, weights = self.multi_head_attention(
            self.normalization1(h), mask=adjacency, need_weights=need_weights
        )
        return self.feed_forward_residual(h + attended), weights


class Encoder(nn.Module):
    """A stack of ``n_layers`` ``EncoderLayer``s: each node mixes information from its graph neighbours.

    After ``n_layers`` layers a node's output depends only on nodes within ``n_layers`` hops.

    Args:
        embed_dim: D. n_heads: H (divides D). n_layers: depth. ff_dim: feed-forward width.
        attention_impl: ``"reference"``, ``"sdpa"`` or ``"sparse"`` (see ``MultiHeadAttention``).

    Shapes:
        h [B,N,D], adjacency bool [B,N,N] -> [B,N,D]; with ``return_attention`` also a list of
        ``n_layers`` weight tensors [B,H,N,N] (rows sum to 1 over allowed keys, 0 for padding).
    """

    def __init__(self, embed_dim: int, n_heads: int, n_layers: int, ff_dim: int, attention_impl: str = "sdpa"):
        super().__init__()
        self.layers = stack_layers(lambda: EncoderLayer(embed_dim, n_heads, ff_dim, attention_impl), n_layers)

    def forward(self, h: Tensor, adjacency: Tensor, return_attention: bool = False):
        B, N, _ = h.shape
        check_bool_mask(adjacency, "adjacency")
        if adjacency.shape != (B, N, N):
            raise ValueError(f"adjacency must be [B,N,N] = {[B, N, N]}, got {list(adjacency.shape)}")
        attention = []
        for layer in self.layers:
            h, weights = layer(h, adjacency, need_weights=return_attention)
            attention.append(weights)
        return (h, attention) if return_attention else h
