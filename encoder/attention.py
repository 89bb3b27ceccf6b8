"""Multi-head scaled dot-product attention, restricted by a boolean mask (True = may attend).

Shape legend used throughout: B batch, Nq queries, Nk keys, D embedding, H heads, d = D / H.
The reference code names them ``n_batch``, ``n_query``, ``n_key``, ``n_dim``.

``MultiHeadAttention`` projects and splits heads; the attention itself is one of five
interchangeable functions with one signature (``ATTENTION_IMPLS`` names them):

    attend(Q [B,H,Nq,d], K [B,H,Nk,d], V [B,H,Nk,d], mask [B,Nq,Nk] or None, norm_factor, need_weights)
        -> (heads [B,H,Nq,d], weights [B,H,Nq,Nk] or None)

``reference_attention`` below is the one to read. ``sdpa_attention`` computes the same numbers
with fused dense kernels, ``neighbor_attention`` with a compiled CPU kernel that skips the masked
pairs, ``sparse_attention`` over a PyG edge list (a cross-check that shares no code with the
others), and ``auto_attention``, the default, picks the kernel or SDPA by the mask's degree.
"""
from __future__ import annotations

import math
import warnings

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from checks import check_choice, check_divides
from encoder.masking import check_bool_mask, masked_softmax
from encoder.neighbor_kernel import kernel_error, neighbor_heads
from encoder.packing import Neighborhoods, attend_rows
from encoder.sparse import sparse_attention


def reference_attention(Q: Tensor, K: Tensor, V: Tensor, mask: Tensor | None, norm_factor: float,
                        need_weights: bool = True) -> tuple[Tensor, Tensor]:
    """The reference's computation, step by step: scores, scale, ``masked_fill``, softmax, sum.

    Always returns the weights (they are computed anyway); rows sum to 1 over allowed keys, 0 if none.
    """
    U = norm_factor * torch.matmul(Q, K.transpose(-2, -1))  # [B,H,Nq,Nk]
    attention = masked_softmax(U, _per_head(mask))  # every head sees the same graph
    return torch.matmul(attention, V), attention  # [B,H,Nq,d], [B,H,Nq,Nk]


def sdpa_attention(Q: Tensor, K: Tensor, V: Tensor, mask: Tensor | None, norm_factor: float,
                   need_weights: bool = False) -> tuple[Tensor, Tensor | None]:
    """The same attention through ``F.scaled_dot_product_attention`` (fused kernels).

    SDPA returns no weights, so a call that needs them (visualisation) takes the reference path.
    A row with no allowed key must come out as zeros. PyTorch's CPU kernels give exactly that,
    forward and backward (the tests check it in fp32, bf16 and fp16), so on the CPU the row is
    left as it is: zeroing it again cost 1-4% of an encoder's forward + backward
    (docs/performance.md). Not every fused GPU kernel promises it: elsewhere ``keyless_rows_zeroed``.
    """
    if need_weights:
        return reference_attention(Q, K, V, mask, norm_factor)
    mask = _per_head(mask)
    if mask is None or Q.device.type == "cpu":
        return F.scaled_dot_product_attention(Q, K, V, attn_mask=mask, scale=norm_factor), None
    return keyless_rows_zeroed(Q, K, V, mask, norm_factor), None


def keyless_rows_zeroed(Q: Tensor, K: Tensor, V: Tensor, mask: Tensor, norm_factor: float) -> Tensor:
    """SDPA where no row reaches a kernel without a key: such a row (a padding node's) is let attend
    to every key, and its output is then set to zero, so the softmax of every row the kernel sees
    is finite, forward and backward, and nothing flows back from the keyless rows (their output's
    gradient is zero). A fused kernel's softmax over a row of nothing but masked scores is 0 / 0.

    Q [B,H,Nq,d], K and V [B,H,Nk,d], mask [B,1,Nq,Nk] bool -> heads [B,H,Nq,d].
    """
    has_key = mask.any(dim=-1, keepdim=True)  # [B,1,Nq,1]
    heads = F.scaled_dot_product_attention(Q, K, V, attn_mask=mask | ~has_key, scale=norm_factor)
    return heads.masked_fill(~has_key, 0.0)


def kernel_applies(mask: Tensor | None, device: torch.device, need_weights: bool) -> bool:
    """Whether the compiled kernel can attend at all: over a mask, on the CPU, with no weights
    asked for (it returns none). Where it cannot, ``neighbors`` and ``auto`` take SDPA."""
    return mask is not None and device.type == "cpu" and not need_weights


def neighbor_attention(Q: Tensor, K: Tensor, V: Tensor, mask: Tensor | None, norm_factor: float,
                        need_weights: bool = False) -> tuple[Tensor, Tensor | None]:
    """The same attention through the compiled kernel of ``encoder.neighbor_kernel``, which
    visits only the allowed (query, key) pairs: O(Nq x degree) per graph where SDPA is O(Nq x Nk).

    It is a CPU kernel without weights: a call that needs the weights takes the reference path,
    and one with no mask (every pair allowed) or on a GPU takes SDPA. A row with no allowed key
    comes out as zeros, with zero gradients, in every float dtype (sums run in fp32 for fp16 and
    bf16).
    """
    if not kernel_applies(mask, Q.device, need_weights):
        return sdpa_attention(Q, K, V, mask, norm_factor, need_weights)
    return neighbor_heads(Q, K, V, mask, norm_factor), None


NEIGHBORS_FROM_KEYS_PER_NEIGHBOR = 2
"""``auto`` takes the kernel when the mask allows at most one (query, key) pair in this many.

The kernel's cost grows with the allowed pairs (a query with none costs nothing), SDPA's with all
B x Nq x Nk pairs at a higher rate per pair: the two break even near half the pairs allowed
(``python -m experiments.neighbor_crossover``; docs/performance.md, "When the kernel wins")."""


def prefers_neighbors(mask: Tensor) -> bool:
    """Whether the kernel beats SDPA for ``mask`` [B,Nq,Nk]: at most one pair in
    ``NEIGHBORS_FROM_KEYS_PER_NEIGHBOR`` allowed."""
    return NEIGHBORS_FROM_KEYS_PER_NEIGHBOR * int(torch.count_nonzero(mask)) <= mask.numel()


def auto_attention(Q: Tensor, K: Tensor, V: Tensor, mask: Tensor | None, norm_factor: float,
                   need_weights: bool = False) -> tuple[Tensor, Tensor | None]:
    """``neighbor_attention`` on the CPU where the graph is sparse enough for the kernel to win
    (``prefers_neighbors``), else ``sdpa_attention``. On a GPU it is SDPA. Where the kernel cannot
    be built (no C++ compiler), SDPA, with one warning that says why."""
    if not (kernel_applies(mask, Q.device, need_weights) and prefers_neighbors(mask)):
        return sdpa_attention(Q, K, V, mask, norm_factor, need_weights)
    error = kernel_error()
    if error is not None:
        warnings.warn(f"attention_impl auto takes SDPA: {error}", stacklevel=2)
        return sdpa_attention(Q, K, V, mask, norm_factor, need_weights)
    return neighbor_attention(Q, K, V, mask, norm_factor)


def takes_kernel(attention_impl: str, mask: Tensor, device: torch.device, need_weights: bool = False) -> bool:
    """Whether ``attention_impl`` attends over ``mask`` [B,Nq,Nk] on ``device`` with the compiled
    kernel (``neighbors``; ``auto`` where the graph is sparse and the kernel builds): where it
    does, the ``Encoder`` packs the batch (``encoder.packing``)."""
    if attention_impl not in ("neighbors", "auto") or not kernel_applies(mask, device, need_weights):
        return False
    return attention_impl == "neighbors" or (prefers_neighbors(mask) and kernel_error() is None)


def _per_head(mask: Tensor | None) -> Tensor | None:
    """[B,Nq,Nk] -> [B,1,Nq,Nk], broadcast over heads."""
    return None if mask is None else mask.unsqueeze(1)


ATTENTION = {"reference": reference_attention, "sdpa": sdpa_attention, "sparse": sparse_attention,
             "neighbors": neighbor_attention, "auto": auto_attention}
ATTENTION_IMPLS = tuple(ATTENTION)
"""The names ``model.attention_impl`` accepts; all give the same outputs, weights and gradients."""


class MultiHeadAttention(nn.Module):
    r"""Multi-head attention as in the reference's ``MultiHeadAttention``, with ``nn.Linear`` projections.

    .. math::
        \mathrm{head}_h = \mathrm{softmax}_{j \in \mathcal{M}(i)}\!\Big(
            \tfrac{(q_i W^Q_h)(k_j W^K_h)^\top}{\sqrt{d}}\Big)\, v_j W^V_h, \qquad
        \mathrm{out}_i = [\mathrm{head}_1; \dots; \mathrm{head}_H]\, W^O

    where :math:`\mathcal{M}(i)` is the set of keys query ``i`` may attend to (``mask[b, i, j]``
    True). The embedding of ``D`` dims is split into ``H`` heads of ``d = D / H`` (128 = 8 x 16
    in the reference), so every head count has the same number of parameters.

    Args:
        embed_dim: D, the size of queries, keys, values and output.
        n_heads: H; must divide ``embed_dim``.
        bias: add biases to the four projections (the reference has none).
        attention_impl: one of ``ATTENTION_IMPLS``: ``"reference"`` (explicit matmuls +
            ``masked_fill``: the code to read), ``"sdpa"`` (``F.scaled_dot_product_attention``:
            fused kernels), ``"neighbors"`` (a compiled CPU kernel over the allowed pairs only),
            ``"sparse"`` (PyG softmax + scatter over the mask's edge list) or ``"auto"`` (the
            default: ``neighbors`` for sparse masks on the CPU, else ``sdpa``; ``auto_attention``).

    Shapes:
        q [B,Nq,D]; k, v [B,Nk,D] (default to ``q``: self-attention); mask bool broadcastable to
        [B,Nq,Nk] -> ``(out [B,Nq,D], weights [B,H,Nq,Nk] if need_weights else None)``, the
        return convention of ``torch.nn.MultiheadAttention``. Or a packed batch
        (``encoder.packing``): q [1,Rq,D], k = v [1,Rk,D] or None (self-attention), and mask
        ``Neighborhoods`` -> ``(out [1,Rq,D], None)``, by the compiled kernel, whatever ``attention_impl``.
    """

    def __init__(self, embed_dim: int, n_heads: int, bias: bool = False, attention_impl: str = "auto"):
        super().__init__()
        check_divides(n_heads, embed_dim)
        check_choice("attention_impl", attention_impl, ATTENTION_IMPLS)
        self.embed_dim = embed_dim
        self.n_heads = n_heads
        self.head_dim = embed_dim // n_heads  # the reference's key_dim == value_dim
        self.norm_factor = 1.0 / math.sqrt(self.head_dim)
        self.attention_impl = attention_impl
        self.attend = ATTENTION[attention_impl]
        self.w_query = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.w_key = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.w_value = nn.Linear(embed_dim, embed_dim, bias=bias)
        self.w_out = nn.Linear(embed_dim, embed_dim, bias=bias)

    def forward(self, q: Tensor, k: Tensor | None = None, v: Tensor | None = None, mask: Tensor | None = None,
                need_weights: bool = False) -> tuple[Tensor, Tensor | None]:
        if isinstance(mask, Neighborhoods):
            if need_weights or k is not v:
                raise ValueError("a packed batch (Neighborhoods) attends without weights, to the rows of q "
                                 "(neither k nor v) or of k (v the same tensor): pass no need_weights")
            return attend_rows(self, q, q if k is None else k, mask), None  # the fast path: encoder/packing.py
        k = q if k is None else k
        v = q if v is None else v
        B, Nq, D = q.shape
        Nk = k.shape[1]
        if D != self.embed_dim or k.shape != (B, Nk, D) or v.shape != (B, Nk, D):
            raise ValueError(
                f"expected q [B,Nq,{self.embed_dim}] and k, v [B,Nk,{self.embed_dim}], "
                f"got q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}"
            )
        check_bool_mask(mask, "mask")
        mask = None if mask is None else mask.expand(B, Nq, Nk)

        Q = self._split_heads(self.w_query(q))  # [B,H,Nq,d]
        K = self._split_heads(self.w_key(k))  # [B,H,Nk,d]
        V = self._split_heads(self.w_value(v))  # [B,H,Nk,d]
        heads, weights = self.attend(Q, K, V, mask, self.norm_factor, need_weights)  # [B,H,Nq,d]
        out = self.w_out(heads.transpose(1, 2).reshape(B, Nq, D))  # concat heads: [B,Nq,H*d] -> [B,Nq,D]
        return out, (weights if need_weights else None)

    def _split_heads(self, x: Tensor) -> Tensor:
        """[B,N,D] -> [B,H,N,d]. The reference keeps heads first, [H,B,N,d]; the maths is the same."""
        B, N, _ = x.shape
        return x.view(B, N, self.n_heads, self.head_dim).transpose(1, 2)
