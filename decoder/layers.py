"""``DecoderLayer`` and ``Decoder``: the current node attends over every real node of the graph.

Shape legend: B batch, N nodes, D embedding, H heads.
"""
from __future__ import annotations

from torch import Tensor, nn

from encoder.layers import AttentionBlock, stack_layers
from encoder.packing import Neighborhoods


class DecoderLayer(AttentionBlock):
    r"""Cross-attention block, as the reference's ``DecoderLayer``.

    .. math::
        t' = t + \mathrm{MHA}(\mathrm{LN}_1(t), \mathrm{LN}_1(m), \text{mask}), \qquad
        \mathrm{out} = t' + \mathrm{FF}(\mathrm{LN}_2(t'))

    As in the reference, one LayerNorm serves both the target ``t`` (the current node) and the
    memory ``m`` (all node embeddings).

    Shapes: tgt [B,1,D], memory [B,N,D], mask bool [B,1,N] (True: a real node)
    -> ``(out [B,1,D], weights [B,H,1,N] if need_weights else None)``; or packed
    (``encoder.packing``): tgt [1,B,D] (a row per graph), memory [1,R,D] (the encoder's rows),
    mask ``Neighborhoods`` (``graph_attention``) -> ``(out [1,B,D], None)``.
    """

    def forward(self, tgt: Tensor, memory: Tensor, mask: Tensor | Neighborhoods, need_weights: bool = False
                ) -> tuple[Tensor, Tensor | None]:
        memory = self.normalization1(memory)  # [B,N,D]
        attended, weights = self.multi_head_attention(self.normalization1(tgt), memory, memory, mask=mask,
                                                      need_weights=need_weights)
        tgt = tgt + attended  # [B,1,D]
        tgt = tgt + self.feed_forward(self.normalization2(tgt))  # [B,1,D]
        return tgt, weights


class Decoder(nn.Module):
    """A stack of ``n_layers`` ``DecoderLayer``s (the reference uses one).

    Shapes: tgt [B,1,D], memory [B,N,D], node_mask bool [B,N] -> ``(out [B,1,D], weights)``:
    ``weights`` is None, or with ``need_weights`` a list of ``n_layers`` tensors [B,H,1,N]. Or
    packed: tgt [1,B,D], memory [1,R,D], node_mask ``Neighborhoods`` -> ``(out [1,B,D], None)``.
    """

    def __init__(self, embed_dim: int, n_heads: int, n_layers: int, ff_dim: int, attention_impl: str = "auto"):
        super().__init__()
        self.layers = stack_layers(lambda: DecoderLayer(embed_dim, n_heads, ff_dim, attention_impl), n_layers)

    def forward(self, tgt: Tensor, memory: Tensor, node_mask: Tensor | Neighborhoods, need_weights: bool = False
                ) -> tuple[Tensor, list[Tensor] | None]:
        # [B,N] -> [B,1,N]: the one query may attend to any real node (packed: the lists say so)
        mask = node_mask if isinstance(node_mask, Neighborhoods) else node_mask.unsqueeze(1)
        per_layer = []
        for layer in self.layers:
            tgt, weights = layer(tgt, memory, mask, need_weights)  # [B,1,D]
            per_layer.append(weights)
        return tgt, (per_layer if need_weights else None)
