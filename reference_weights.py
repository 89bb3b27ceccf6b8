"""Weights of the reference's ``PolicyNet`` (ARiADNE ``model.py`` at cb788e5) loaded into ours.

The two networks compute the same function from the same numbers; only the layout differs
(docs/reading-guide.md, "Parameter names"). A reference key becomes ours in four steps:

1. ``initial_embedding``, ``current_embedding``, ``encoder`` and ``decoder`` move under
   ``actor_trunk.``; ``pointer`` stays where it is.
2. ``multiHeadAttention`` -> ``multi_head_attention``, ``feedForward`` -> ``feed_forward``, and the
   ``.normalizer.`` level of the reference's ``Normalization`` wrapper goes (ours is the LayerNorm).
3. Each raw parameter ``w_*`` becomes the ``weight`` of an ``nn.Linear``: ``w_query`` -> ``w_query.weight``.
4. Its tensor is laid out as ``nn.Linear`` wants it, [out, in] with ``y = x @ weight.T``:
   per-head ``w_query`` / ``w_key`` / ``w_value`` [H,D,d] -> [H*d,D], rows ``h*d .. h*d+d-1`` being
   ``w[h].T``; ``w_out`` [H,d,D] -> [D,H*d]; the pointer's single-head ``w_query`` / ``w_key`` [D,D]
   are transposed.

What has no counterpart: our ``value_head`` (and ``critic_trunk`` with ``separate_critic``) is not
in the reference's ``PolicyNet``, and the reference's ``QNet`` (SAC's Q(s, a): ``action_embedding``
[D,3D] over (decoder output, current node, candidate), ``q_values_layer``) has no home here, so
neither is loaded. The reference reads F = 4 node features whose meaning differs from ours
(docs/reading-guide.md, "Node features"): build the policy with ``n_node_features=4`` to load it.
"""
from __future__ import annotations

from torch import Tensor

from policy import PolicyNet

TRUNK_PARTS = ("initial_embedding.", "current_embedding.", "encoder.", "decoder.")
RENAMES = {".multiHeadAttention.": ".multi_head_attention.", ".feedForward.": ".feed_forward.",
           ".normalizer.": "."}
NOT_IN_REFERENCE = ("value_head.", "critic_trunk.")
"""Our parameters the reference's ``PolicyNet`` has no counterpart for; they keep their values."""


def reference_key(key: str) -> str:
    """Our name for the reference's parameter ``key`` (steps 1-3 of the module docstring)."""
    if key.startswith(TRUNK_PARTS):
        key = "actor_trunk." + key
    for old, new in RENAMES.items():
        key = key.replace(old, new)
    if key.rpartition(".")[2].startswith("w_"):
        key += ".weight"
    return key


def reference_tensor(key: str, value: Tensor) -> Tensor:
    """The reference's ``value`` of parameter ``key`` in our ``nn.Linear`` layout (step 4).

    ``y = x @ w`` in the reference, ``y = x @ weight.T`` here, so every ``w_*`` is transposed; a
    per-head [H,in,out] first stacks its heads along the output, [H*out,in], and ``w_out``
    [H,d,D], whose heads are its input, is flattened to [H*d,D] before the transpose.
    """
    name = key.rpartition(".")[2]
    if not name.startswith("w_"):
        return value
    if value.dim() == 2:  # the pointer's single head: [D,D]
        return value.t().contiguous()
    H, n_in, n_out = value.shape
    if name == "w_out":  # [H,d,D] -> [H*d,D] -> [D,H*d]
        return value.reshape(H * n_in, n_out).t().contiguous()
    return value.transpose(1, 2).reshape(H * n_out, n_in).contiguous()  # [H,D,d] -> [H,d,D] -> [H*d,D]


def from_reference_state_dict(reference: dict[str, Tensor]) -> dict[str, Tensor]:
    """A state dict of the reference's ``PolicyNet`` under our names and layouts (every key mapped)."""
    return {reference_key(key): reference_tensor(key, value) for key, value in reference.items()}


def load_reference_weights(policy: PolicyNet, reference: dict[str, Tensor]) -> None:
    """Load the reference's ``PolicyNet`` weights into ``policy``; its value head (and critic trunk)
    keep their own values, being none of the reference's.

    Raises ValueError where the head counts differ (the per-head split would silently mix heads:
    the flattened tensors have the same shape for every head count) or where the keys do not
    cover ``policy`` exactly; shapes are checked by ``load_state_dict``.
    """
    heads = {value.shape[0] for key, value in reference.items() if key.endswith(".w_query") and value.dim() == 3}
    if heads != {policy.config.n_heads}:
        raise ValueError(f"the reference has {sorted(heads)} heads, the policy n_heads={policy.config.n_heads}")
    ours = policy.state_dict()
    mapped = from_reference_state_dict(reference)
    expected = {key for key in ours if not key.startswith(NOT_IN_REFERENCE)}
    if set(mapped) != expected:
        raise ValueError(f"reference keys do not match the policy: missing {sorted(expected - set(mapped))}, "
                         f"unexpected {sorted(set(mapped) - expected)}")
    policy.load_state_dict({**ours, **mapped}, strict=True)
