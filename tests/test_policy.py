"""PolicyNet: observation dict in, masked logits and a value out."""
import numpy as np
import pytest
import torch
from torch.distributions import Categorical

import policy as policy_module
from config import ModelConfig
from encoder.attention import ATTENTION_IMPLS
from env.observation import N_NODE_FEATURES, observation_space
from graph_batch import collate
from policy import PolicyNet
from tests.helpers import HEAD_COUNTS, N_MAX, K, observations


def small_config(**overrides):
    return ModelConfig(**{"embed_dim": 32, "n_heads": 4, "n_layers": 2, "ff_dim": 64, **overrides})


def make_policy(**overrides):
    torch.manual_seed(0)
    return PolicyNet(small_config(**overrides))


def single(obs, b):
    return {key: value[b] for key, value in obs.items()}


def test_test_observations_fit_the_env_observation_space():
    space = observation_space(N_MAX, K)
    obs = observations(4)
    for b in range(4):
        assert space.contains(single(obs, b))


@pytest.mark.parametrize("n_heads", HEAD_COUNTS)
def test_batched_output_shapes_and_masking(n_heads):
    obs = observations(6)
    logits, value = make_policy(n_heads=n_heads)(collate(obs))
    assert logits.shape == (6, K) and value.shape == (6,)
    probs = Categorical(logits=logits).probs
    action_mask = torch.from_numpy(obs["action_mask"]).bool()
    assert torch.equal(probs[~action_mask], torch.zeros(int((~action_mask).sum())))
    assert torch.isfinite(Categorical(logits=logits).entropy()).all()


def test_single_numpy_torch_and_batched_observations_agree():
    policy, obs = make_policy(), observations(3)
    logits, value = policy(collate(obs))
    for b in range(3):
        one = single(obs, b)
        torch.testing.assert_close(policy(collate(one))[0], logits[b : b + 1])
        torch_one = {key: torch.as_tensor(value) for key, value in one.items()}
        torch.testing.assert_close(policy(collate(torch_one))[1], value[b : b + 1])


def test_attention_implementations_give_the_same_policy():
    obs = observations(4)
    outputs = [make_policy(attention_impl=impl)(collate(obs)) for impl in ATTENTION_IMPLS]
    for logits, value in outputs[1:]:
        torch.testing.assert_close(logits, outputs[0][0])
        torch.testing.assert_close(value, outputs[0][1])


def test_where_the_encoder_packs_the_decoder_and_pointer_read_its_rows_as_the_padded_path(monkeypatch):
    """``auto`` on the CPU packs the batch, and the trunk then stays on rows through the decoder and
    the candidates (``encoder.packing.trunk_rows``): logits, values and every gradient against the
    reference path's padded trunk with the same weights."""
    obs = observations(6)
    taken = []
    rows_path = policy_module.trunk_rows
    monkeypatch.setattr(policy_module, "trunk_rows", lambda *args: taken.append(1) or rows_path(*args))
    results = []
    for impl in ("auto", "reference"):
        policy = make_policy(attention_impl=impl)
        logits, value = policy(collate(obs))
        loss = torch.logsumexp(logits.clamp(min=-1e4), dim=-1).sum() + value.square().sum()
        results.append([logits, value, *torch.autograd.grad(loss, list(policy.parameters()))])
    assert taken == [1]
    for ours, expected in zip(*results):
        torch.testing.assert_close(ours, expected)


def test_a_bf16_trunk_feeds_float32_logits_close_to_the_float32_ones():
    policy, obs = make_policy(), observations(4)
    dtypes = {}

    def record_dtype(name):
        def hook(module, args, out):
            dtypes[name] = (out[0] if isinstance(out, tuple) else out).dtype
        return hook

    for name in ("actor_trunk.encoder.layers.0.feed_forward.0", "pointer"):
        policy.get_submodule(name).register_forward_hook(record_dtype(name))
    logits, value = policy(collate(obs), trunk_dtype=torch.bfloat16)
    assert dtypes == {"actor_trunk.encoder.layers.0.feed_forward.0": torch.bfloat16, "pointer": torch.float32}
    assert logits.dtype == value.dtype == torch.float32
    full_logits, full_value = policy(collate(obs))
    valid = torch.as_tensor(obs["action_mask"]).bool()
    assert torch.equal(logits[~valid], full_logits[~valid])  # float32's most negative value: probability 0
    assert not torch.equal(logits[valid], full_logits[valid])  # it did compute in bf16
    torch.testing.assert_close(logits[valid], full_logits[valid], rtol=0, atol=0.1)  # C = 10, bf16 keeps 8 bits
    torch.testing.assert_close(value, full_value, rtol=0, atol=0.05)


def test_need_weights_exposes_every_layer_and_the_pointer():
    obs = observations(2)
    n_used = int(obs["node_mask"].any(0).nonzero()[0].max()) + 1  # trailing padding is trimmed
    logits, value, attention = make_policy()(collate(obs), need_weights=True)
    assert len(attention.encoder) == 2 and attention.encoder[0].shape == (2, 4, n_used, n_used)
    assert attention.decoder[0].shape == (2, 4, 1, n_used)
    torch.testing.assert_close(attention.pointer, torch.softmax(logits, -1))


def test_separate_critic_shares_nothing_with_the_actor():
    policy, obs = make_policy(separate_critic=True), observations(3)
    logits, value = policy(collate(obs))
    value.sum().backward()
    assert all(p.grad is None for p in policy.actor_trunk.parameters())
    assert all(p.grad is None for p in policy.pointer.parameters())
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in policy.critic_trunk.parameters())


def test_shared_critic_trains_the_shared_trunk():
    policy = make_policy()
    policy(collate(observations(3)))[1].sum().backward()
    assert policy.critic_trunk is None
    assert policy.actor_trunk.encoder.layers[0].feed_forward[0].weight.grad.abs().sum() > 0


def test_no_valid_action_is_an_error():
    obs = observations(2)
    obs["action_mask"][0] = 0
    with pytest.raises(ValueError, match=r"every candidate is masked for batch rows \[0\]"):
        make_policy()(collate(obs))


def test_head_count_does_not_change_the_parameter_count():
    counts = {h: sum(p.numel() for p in PolicyNet(small_config(n_heads=h)).parameters()) for h in HEAD_COUNTS}
    assert len(set(counts.values())) == 1, counts


def test_policy_leaves_the_observation_untouched():
    obs = observations(3)
    before = {key: value.copy() for key, value in obs.items()}
    make_policy()(collate(obs), need_weights=True)
    for key, value in obs.items():
        assert np.array_equal(value, before[key]), key


def test_trailing_padding_is_trimmed_without_changing_any_output():
    obs = observations(3)
    padded = dict(obs)
    extra = 20  # a larger N_max: 20 more padding nodes, with garbage features
    padded["node_features"] = np.concatenate([obs["node_features"], np.full((3, extra, N_NODE_FEATURES), 9, np.float32)], 1)
    padded["node_mask"] = np.concatenate([obs["node_mask"], np.zeros((3, extra), np.int8)], 1)
    padded["neighbors"] = np.concatenate([obs["neighbors"], np.full((3, extra, K), N_MAX + 1)], 1)
    policy = make_policy()
    for got, expected in zip(policy(collate(padded)), policy(collate(obs))):
        torch.testing.assert_close(got, expected)
