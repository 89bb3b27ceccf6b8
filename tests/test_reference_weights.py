"""reference_weights: a state dict in the reference's layout (ARiADNE model.py at cb788e5) loads into
PolicyNet and computes what the reference's per-head matmuls compute, written out here by hand."""
import math

import pytest
import torch
import torch.nn.functional as F

from config import ModelConfig
from graph_batch import collate
from policy import PolicyNet
from reference_weights import from_reference_state_dict, load_reference_weights
from tests.helpers import HEAD_COUNTS, observations

F_REF = 4  # the reference's INPUT_DIM: x, y, utility, guidepost


def reference_layout(D=16, H=4, n_layers=2, n_decoder_layers=1, ff=24, seed=0):
    """Random weights under the key names and shapes of the reference's ``PolicyNet``: raw
    per-head ``w_*`` [H,D,d] and ``w_out`` [H,d,D], LayerNorms inside ``Normalization.normalizer``,
    the pointer's single-head ``w_query`` / ``w_key`` [D,D]."""
    g = torch.Generator().manual_seed(seed)
    d = D // H
    shapes = {"initial_embedding.weight": (D, F_REF), "initial_embedding.bias": (D,),
              "current_embedding.weight": (D, 2 * D), "current_embedding.bias": (D,)}
    for part, n in (("encoder", n_layers), ("decoder", n_decoder_layers)):
        for i in range(n):
            p = f"{part}.layers.{i}."
            for w in ("w_query", "w_key", "w_value"):
                shapes[p + "multiHeadAttention." + w] = (H, D, d)
            shapes[p + "multiHeadAttention.w_out"] = (H, d, D)
            for norm in ("normalization1", "normalization2"):
                shapes[f"{p}{norm}.normalizer.weight"] = shapes[f"{p}{norm}.normalizer.bias"] = (D,)
            shapes.update({p + "feedForward.0.weight": (ff, D), p + "feedForward.0.bias": (ff,),
                           p + "feedForward.2.weight": (D, ff), p + "feedForward.2.bias": (D,)})
    shapes["pointer.w_query"] = shapes["pointer.w_key"] = (D, D)
    state = {key: torch.randn(shape, generator=g) / math.sqrt(shape[-1]) for key, shape in shapes.items()}
    for key in state:
        if key.endswith("normalizer.weight"):
            state[key] += 1.0  # LayerNorm gains near 1, as trained ones are
    return state


def policy_for(D=16, H=4, n_layers=2, n_decoder_layers=1, ff=24, **overrides):
    config = ModelConfig(embed_dim=D, n_heads=H, n_layers=n_layers, n_decoder_layers=n_decoder_layers,
                         ff_dim=ff, attention_impl="reference", **overrides)
    return PolicyNet(config, n_node_features=F_REF)


# The reference's computation, by hand: y = x @ w, one [D,d] matrix per head.
def per_head_attention(w, q, kv, blocked):
    """q [B,Nq,D], kv [B,Nk,D], blocked bool [B,Nq,Nk] -> [B,Nq,D]; heads first, as the reference."""
    Q = torch.einsum("bqi,hid->hbqd", q, w["w_query"])
    K = torch.einsum("bki,hid->hbkd", kv, w["w_key"])
    V = torch.einsum("bki,hid->hbkd", kv, w["w_value"])
    U = torch.einsum("hbqd,hbkd->hbqk", Q, K) / math.sqrt(Q.shape[-1])
    A = torch.softmax(U.masked_fill(blocked, -1e8), dim=-1)
    return torch.einsum("hbqk,hbkd,hdo->bqo", A, V, w["w_out"])


def pointer_log_probs(w, q, k, blocked, C=10.0):
    """q [B,1,D], k [B,K,D], blocked [B,1,K] -> log-probabilities [B,1,K]."""
    U = torch.einsum("bqi,ij,bkl,lj->bqk", q, w["w_query"], k, w["w_key"]) / math.sqrt(q.shape[-1])
    return torch.log_softmax((C * torch.tanh(U)).masked_fill(blocked, -1e8), dim=-1)


def sub(state, prefix):
    return {key[len(prefix):]: value for key, value in state.items() if key.startswith(prefix)}


def block(w, x, memory, blocked):
    """A pre-LayerNorm block in the reference's layout (its Normalization is a LayerNorm over D)."""
    def norm(name, y):
        return F.layer_norm(y, y.shape[-1:], w[f"{name}.normalizer.weight"], w[f"{name}.normalizer.bias"])
    memory = norm("normalization1", x if memory is None else memory)
    x = x + per_head_attention(sub(w, "multiHeadAttention."), norm("normalization1", x), memory, blocked)
    hidden = F.relu(F.linear(norm("normalization2", x), w["feedForward.0.weight"], w["feedForward.0.bias"]))
    return x + F.linear(hidden, w["feedForward.2.weight"], w["feedForward.2.bias"])


@pytest.mark.parametrize("n_heads", HEAD_COUNTS)
def test_mapped_attention_computes_the_per_head_matmuls(n_heads):
    ref = reference_layout(D=16, H=n_heads)
    policy = policy_for(D=16, H=n_heads)
    load_reference_weights(policy, ref)
    g = torch.Generator().manual_seed(1)
    q, kv = torch.randn(2, 5, 16, generator=g), torch.randn(2, 7, 16, generator=g)
    allowed = torch.rand(2, 5, 7, generator=g) < 0.5
    allowed[:, :, 0] = True  # every query has a key: the reference's padding rows differ (see the guide)
    ours, _ = policy.actor_trunk.encoder.layers[1].multi_head_attention(q, kv, kv, mask=allowed)
    expected = per_head_attention(sub(ref, "encoder.layers.1.multiHeadAttention."), q, kv, ~allowed)
    torch.testing.assert_close(ours, expected)


def test_mapped_pointer_computes_the_single_head_matmul():
    ref = reference_layout()
    policy = policy_for()
    load_reference_weights(policy, ref)
    q, k = torch.randn(3, 1, 16), torch.randn(3, 6, 16)
    allowed = torch.rand(3, 6) < 0.6
    allowed[:, 1] = True
    logits = policy.pointer(q, k, allowed).squeeze(1)  # [B,K]
    expected = pointer_log_probs(sub(ref, "pointer."), q, k, ~allowed.unsqueeze(1))
    torch.testing.assert_close(torch.log_softmax(logits, -1)[allowed], expected.squeeze(1)[allowed])


def test_mapped_policy_gives_the_reference_networks_move_probabilities():
    # fp64: four layers of fp32 rounding would need a loose tolerance that could hide a small error
    ref = {key: value.double() for key, value in reference_layout(n_layers=2, n_decoder_layers=2).items()}
    policy = policy_for(n_layers=2, n_decoder_layers=2).double()
    load_reference_weights(policy, ref)
    obs = observations(4, seed=3)
    obs["node_features"] = obs["node_features"][..., :F_REF]
    batch = collate(obs)
    batch.node_features = batch.node_features.double()
    logits, _ = policy(batch)

    B = logits.shape[0]
    h = F.linear(batch.node_features, ref["initial_embedding.weight"], ref["initial_embedding.bias"])
    for i in range(2):
        h = block(sub(ref, f"encoder.layers.{i}."), h, None, ~batch.adjacency)
    current = h[torch.arange(B), batch.current_index].unsqueeze(1)  # [B,1,D]
    t = current
    for i in range(2):
        t = block(sub(ref, f"decoder.layers.{i}."), t, h, ~batch.node_mask.unsqueeze(1))  # [B,1,N]
    t = F.linear(torch.cat([t, current], -1), ref["current_embedding.weight"], ref["current_embedding.bias"])
    candidates = h[torch.arange(B)[:, None], batch.candidates]  # [B,K,D]
    expected = pointer_log_probs(sub(ref, "pointer."), t, candidates, ~batch.action_mask.unsqueeze(1)).squeeze(1)
    allowed = batch.action_mask
    torch.testing.assert_close(torch.log_softmax(logits, -1)[allowed], expected[allowed])


def test_reference_sizes_load_strictly_and_leave_the_value_head_alone():
    ref = reference_layout(D=128, H=8, n_layers=6, n_decoder_layers=1, ff=512)  # ARiADNE's PolicyNet
    policy = policy_for(D=128, H=8, n_layers=6, n_decoder_layers=1, ff=512)
    value_head = {k: v.clone() for k, v in policy.value_head.state_dict().items()}
    load_reference_weights(policy, ref)
    mapped = from_reference_state_dict(ref)
    assert len(mapped) == len(ref)  # no two reference keys meet under one name
    assert set(policy.state_dict()) - set(mapped) == {"value_head.weight", "value_head.bias"}
    for key, value in mapped.items():
        assert torch.equal(policy.state_dict()[key], value), key
    for key, value in policy.value_head.state_dict().items():
        assert torch.equal(value, value_head[key])
    assert torch.equal(policy.state_dict()["actor_trunk.encoder.layers.5.normalization2.weight"],
                       ref["encoder.layers.5.normalization2.normalizer.weight"])
    assert torch.equal(policy.pointer.w_key.weight, ref["pointer.w_key"].T)


def test_a_head_count_other_than_the_references_is_refused():
    with pytest.raises(ValueError, match=r"the reference has \[4\] heads, the policy n_heads=2"):
        load_reference_weights(policy_for(H=2), reference_layout(H=4))


def test_a_missing_reference_key_is_named():
    ref = reference_layout()
    del ref["decoder.layers.0.feedForward.2.bias"]
    with pytest.raises(ValueError, match=r"missing \['actor_trunk.decoder.layers.0.feed_forward.2.bias'\]"):
        load_reference_weights(policy_for(), ref)
