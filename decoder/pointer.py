"""``SingleHeadAttention``: the pointer that scores the robot's candidate moves.

Shape legend: B batch, Nq queries (1: the current node), K candidate neighbours, D embedding.
"""
from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from checks import check_positive
from encoder.masking import check_bool_mask, masked_fill_scores


class SingleHeadAttention(nn.Module):
    r"""Single-head pointer attention with tanh clipping, as the reference's ``SingleHeadAttention``.

    .. math::
        u_{k} = C \tanh\!\big(\mathrm{norm\_factor} \cdot (q W^Q)(h_k W^K)^\top\big), \qquad
        \mathrm{norm\_factor} = 1/\sqrt{D}

    then candidates whose mask is False are set to the dtype's most negative value, so their
    probability under ``softmax`` / ``Categorical(logits=...)`` is exactly 0. The reference
    returns ``log_softmax`` of these scores; returning the masked logits leaves normalisation to
    the distribution, which gives the same probabilities.

    Args:
        embed_dim: D. tanh_clipping: C (10 in the reference), bounds logits to [-C, C].

    Shapes:
        q [B,Nq,D], k [B,K,D], mask bool [B,K] or [B,Nq,K] (True = may move there) -> logits [B,Nq,K].
        A row with no allowed candidate is a ValueError: there is no valid action to sample.
    """

    def __init__(self, embed_dim: int, tanh_clipping: float = 10.0):
        super().__init__()
        check_positive("tanh_clipping", tanh_clipping)
        self.tanh_clipping = tanh_clipping
        self.norm_factor = 1.0 / math.sqrt(embed_dim)
        self.w_query = nn.Linear(embed_dim, embed_dim, bias=False)
        self.w_key = nn.Linear(embed_dim, embed_dim, bias=False)

    def forward(self, q: Tensor, k: Tensor, mask: Tensor | None = None) -> Tensor:
        B, Nq, D = q.shape
        U = self.norm_factor * torch.matmul(self.w_query(q), self.w_key(k).transpose(1, 2))  # [B,Nq,K]
        U = self.tanh_clipping * torch.tanh(U)  # clip before masking: masked stays masked
        if mask is None:
            return U
        check_bool_mask(mask, "mask")
        mask = mask.unsqueeze(1) if mask.dim() == 2 else mask  # [B,K] -> [B,1,K]
        empty = ~mask.any(dim=-1)  # [B,Nq]
        if empty.any():
            raise ValueError(
                f"every candidate is masked for batch rows {empty.any(dim=-1).nonzero().flatten().tolist()}: "
                "the action mask must allow at least one move"
            )
        return masked_fill_scores(U, mask)
