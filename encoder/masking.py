"""The project's one mask rule, in code: every boolean mask means **True = present / allowed**.

This is the polarity of ``F.scaled_dot_product_attention``'s boolean ``attn_mask``, of
gymnasium action masks and of PyG's ``to_dense_batch``. The reference code uses the opposite
(``mask == 1`` means blocked, filled with ``-1e8``); ``docs/reading-guide.md`` shows the flip.
"""
from __future__ import annotations

import torch
from torch import Tensor


def mask_fill_value(dtype: torch.dtype) -> float:
    """The most negative finite value of ``dtype``, used to blank out disallowed scores.

    The reference's ``-1e8`` becomes ``-inf`` in fp16 (whose range ends at -65504), and a
    softmax over a row of ``-inf`` is NaN. A finite fill keeps such a row finite: softmax
    subtracts the row maximum first, so a fully blanked row turns uniform, never NaN, and
    ``masked_softmax`` then zeroes it. ``Categorical`` likewise gives a blanked action
    probability 0 and an entropy term of exactly 0.
    """
    return torch.finfo(dtype).min


def masked_fill_scores(scores: Tensor, mask: Tensor | None) -> Tensor:
    """``scores`` with every position where ``mask`` is False set to ``mask_fill_value``."""
    if mask is None:
        return scores
    return scores.masked_fill(~mask, mask_fill_value(scores.dtype))


def masked_softmax(scores: Tensor, mask: Tensor | None, dim: int = -1) -> Tensor:
    """Softmax over ``dim`` restricted to ``mask``; a row with no allowed entry is all zeros.

    Zeroing after the softmax (rather than trusting the fill value) is what makes a padding
    row give exact zeros, in the output and in the gradient, in every float dtype.
    """
    weights = torch.softmax(masked_fill_scores(scores, mask), dim=dim)
    if mask is None:
        return weights
    return weights.masked_fill(~mask, 0.0)


def check_bool_mask(mask: Tensor | None, name: str) -> None:
    """Raise a TypeError unless ``mask`` is None or a ``torch.bool`` tensor.

    An integer 0/1 mask would be read with the reference's polarity by some and ours by
    others; refusing it at the boundary keeps the one rule.
    """
    if mask is not None and mask.dtype != torch.bool:
        raise TypeError(
            f"{name} must be a torch.bool tensor (True = allowed), got dtype {mask.dtype}; "
            f"convert with `{name}.bool()` if 1 means allowed, `~{name}.bool()` if 1 means blocked"
        )


def check_adjacency(h: Tensor, adjacency: Tensor) -> None:
    """Raise ValueError unless ``adjacency`` is a bool [B,N,N] for h [B,N,D]."""
    B, N, _ = h.shape
    check_bool_mask(adjacency, "adjacency")
    if adjacency.shape != (B, N, N):
        raise ValueError(f"adjacency must be [B,N,N] = {[B, N, N]}, got {list(adjacency.shape)}")
