"""The masked action distribution and one PPO update on a synthetic rollout."""

import pytest
import torch

from bench.synthetic import random_graph
from config import ModelConfig, PPOConfig
from env.observation import N_NODE_FEATURES
from graph_batch import forward_observations, torch_threads
from learning.buffer import Rollout
from learning.ppo import NonFiniteLossError, adam, explained_variance, masked_policy, ppo_update
from policy import PolicyNet


def test_masked_actions_have_probability_zero_and_no_entropy_share():
    logits = torch.tensor([[1.0, -2.0, 0.5, 3.0]])
    mask = torch.tensor([[True, False, True, False]])
    dist = masked_policy(logits.masked_fill(~mask, torch.finfo(torch.float32).min))
    valid = torch.softmax(logits[mask], -1)  # the distribution over valid actions alone
    torch.testing.assert_close(dist.probs[mask], valid)
    assert torch.equal(dist.probs[~mask], torch.zeros(2))
    torch.testing.assert_close(dist.entropy(), -(valid * valid.log()).sum().unsqueeze(0))
    assert mask[0, dist.sample((1000,)).flatten()].all()


def test_explained_variance_of_perfect_and_mean_predictions():
    target = torch.tensor([1.0, 2.0, 4.0])
    assert explained_variance(target, target) == 1.0
    assert abs(explained_variance(torch.full((3,), target.mean()), target)) < 1e-6


def test_adam_is_the_fused_step_and_moves_the_weights_as_the_looped_one():
    torch.manual_seed(0)
    weights = [torch.randn(64, 64), torch.randn(64)]
    gradients = [[torch.randn_like(w) for w in weights] for _ in range(5)]
    moved = []
    for make in (lambda p: adam(p, 1e-3), lambda p: torch.optim.Adam(p, lr=1e-3, eps=1e-5, foreach=False)):
        params = [w.clone().requires_grad_() for w in weights]
        optimizer = make(params)
        for step in gradients:
            for p, g in zip(params, step):
                p.grad = g.clone()
            optimizer.step()
        moved.append(params)
    settings = adam(moved[0], 1e-3).defaults
    assert settings["fused"] and settings["eps"] == 1e-5 and settings["lr"] == 1e-3
    for fused, looped, start in zip(*moved, weights):
        assert (looped - start).abs().max() > 1e-3  # five steps of 1e-3 moved every weight
        torch.testing.assert_close(fused, looped, rtol=1e-6, atol=1e-7)


def synthetic_rollout(T=8, E=4, N=10, K=4, full=True):
    """Random graphs: all of N real nodes, or (``full=False``) a random number of them."""
    rollout = Rollout(T, E)
    for t in range(T):
        neighbors, node_mask = random_graph(E, N, K, seed=t, n_real=[N] * E if full else None)
        rollout.store_obs(t, {"node_features": torch.rand(E, N, N_NODE_FEATURES), "node_mask": node_mask, "neighbors": neighbors,
                              "current_index": torch.zeros(E, dtype=torch.long), "action_mask": neighbors[:, 0] >= 0})
    return rollout


@pytest.mark.parametrize("update_dtype", ["float32", "bfloat16"])
def test_update_raises_the_probability_of_actions_with_positive_advantage(update_dtype):
    torch.manual_seed(0)
    policy = PolicyNet(ModelConfig(embed_dim=16, n_heads=2, n_layers=1, ff_dim=32))
    rollout = synthetic_rollout()
    obs = rollout.flat_obs(torch.arange(32))
    with torch.no_grad():
        logits, values = forward_observations(policy, obs)
        dist = masked_policy(logits)
        actions = dist.sample()
        rollout.actions = actions.view(8, 4)
        rollout.logprobs = dist.log_prob(actions).view(8, 4)
        rollout.values = values.view(8, 4)
    advantages = torch.where(actions.view(8, 4) == 0, 1.0, -1.0)  # staying in slot 0 was good, all else bad
    optimizer = torch.optim.Adam(policy.parameters(), lr=1e-2)
    stats = ppo_update(policy, optimizer, rollout, advantages, advantages + rollout.values,
                       PPOConfig(update_dtype=update_dtype), 0)
    with torch.no_grad():
        after = masked_policy(forward_observations(policy, obs)[0]).probs[:, 0]
    # From 0.376: +0.077 with SDPA, +0.048 with the neighbour kernel (auto). Adam turns the last-bit
    # differences of near-zero gradients into different steps, so the exact rise is not a property.
    assert after.mean() > dist.probs[:, 0].mean() + 0.03
    assert set(stats) == {"policy_loss", "value_loss", "entropy", "approx_kl", "clipfrac", "explained_variance"}
    assert stats["approx_kl"] > 0 and 0 <= stats["clipfrac"] <= 1


def small_policy(seed=0):
    torch.manual_seed(seed)
    return PolicyNet(ModelConfig(embed_dim=16, n_heads=2, n_layers=2, ff_dim=32))


def test_update_in_size_buckets_moves_the_weights_as_the_update_in_one_call():
    rollout = synthetic_rollout(N=12, full=False)
    obs = rollout.flat_obs(torch.arange(32))
    with torch.no_grad():
        logits, values = forward_observations(small_policy(), obs)
        actions = masked_policy(logits).sample()
    rollout.actions = actions.view(8, 4)
    rollout.logprobs = masked_policy(logits).log_prob(actions).view(8, 4)
    rollout.values = values.view(8, 4)
    advantages = torch.randn(8, 4)
    weights = []
    for buckets in (1, 4):
        policy = small_policy()
        optimizer = torch.optim.Adam(policy.parameters(), lr=1e-3)
        torch.manual_seed(1)  # the same minibatches
        ppo_update(policy, optimizer, rollout, advantages, advantages + rollout.values,
                   PPOConfig(num_minibatches=2, update_epochs=2, size_buckets=buckets), 0)
        weights.append(torch.cat([p.detach().flatten() for p in policy.parameters()]))
    moved = (weights[0] - torch.cat([p.detach().flatten() for p in small_policy().parameters()])).abs().max()
    assert moved > 1e-4  # the update did something to compare
    torch.testing.assert_close(weights[1], weights[0], rtol=1e-4, atol=1e-5)


def sampled_rollout(policy):
    """A synthetic rollout of graphs of different sizes with the moves ``policy`` samples."""
    rollout = synthetic_rollout(N=12, full=False)
    with torch.no_grad():
        logits, values = forward_observations(policy, rollout.flat_obs(torch.arange(32)))
        dist = masked_policy(logits)
        actions = dist.sample()
    rollout.actions, rollout.logprobs, rollout.values = actions.view(8, 4), dist.log_prob(actions).view(8, 4), values.view(8, 4)
    return rollout


def updated_weights(rollout, advantages, **settings):
    """The weights of ``small_policy()`` after one update with ``settings``, on two torch threads."""
    policy = small_policy()
    torch.manual_seed(1)  # the same minibatches
    with torch_threads(2):
        ppo_update(policy, adam(policy.parameters(), 1e-3), rollout, advantages, advantages + rollout.values,
                   PPOConfig(num_minibatches=2, update_epochs=2, **settings), 0)
    return torch.cat([p.detach().flatten() for p in policy.parameters()])


def test_an_update_moves_the_weights_and_repeats_bit_for_bit():
    rollout = sampled_rollout(small_policy())
    advantages = torch.randn(8, 4)
    once = updated_weights(rollout, advantages)
    assert (once - torch.cat([p.detach().flatten() for p in small_policy().parameters()])).abs().max() > 1e-4
    assert torch.equal(updated_weights(rollout, advantages), once)


def test_an_update_step_is_cleanrls_step_on_the_whole_minibatch():
    """One minibatch, one epoch, against CleanRL's loss written out
    here over the whole minibatch (normalised advantages, clipped surrogate, clipped value loss,
    entropy bonus), one backward, the clip and one Adam step."""
    rollout = sampled_rollout(small_policy())
    advantages = torch.randn(8, 4)
    returns = advantages + rollout.values
    c = PPOConfig(num_minibatches=1, update_epochs=1)
    reference = small_policy()
    optimizer = adam(reference.parameters(), 1e-3)
    torch.manual_seed(1)
    index = torch.randperm(32)  # the update's own permutation: the same order of states
    logits, values = forward_observations(reference, rollout.flat_obs(index))
    dist = masked_policy(logits)
    ratio = (dist.log_prob(rollout.actions.flatten()[index]) - rollout.logprobs.flatten()[index]).exp()
    adv = advantages.flatten()[index]
    adv = (adv - adv.mean()) / (adv.std() + 1e-8)
    surrogate = torch.max(-adv * ratio, -adv * ratio.clamp(1 - c.clip_coef, 1 + c.clip_coef)).mean()
    old, target = rollout.values.flatten()[index], returns.flatten()[index]
    clipped = old + (values - old).clamp(-c.clip_coef, c.clip_coef)
    value_loss = 0.5 * torch.max((values - target) ** 2, (clipped - target) ** 2).mean()
    (surrogate - c.ent_coef * dist.entropy().mean() + c.vf_coef * value_loss).backward()
    torch.nn.utils.clip_grad_norm_(reference.parameters(), c.max_grad_norm)
    optimizer.step()

    policy = small_policy()
    torch.manual_seed(1)
    with torch_threads(2):
        ppo_update(policy, adam(policy.parameters(), 1e-3), rollout, advantages, returns, c, 0)
    ours, theirs = (torch.cat([p.detach().flatten() for p in net.parameters()]) for net in (policy, reference))
    assert (theirs - torch.cat([p.detach().flatten() for p in small_policy().parameters()])).abs().max() > 1e-4
    torch.testing.assert_close(ours, theirs, rtol=1e-4, atol=1e-5)


def test_a_non_finite_loss_stops_the_update_before_the_weights_change():
    rollout = synthetic_rollout()
    obs = rollout.flat_obs(torch.arange(32))
    policy = small_policy()
    with torch.no_grad():
        logits, values = forward_observations(policy, obs)
    rollout.actions = masked_policy(logits).sample().view(8, 4)
    rollout.logprobs = masked_policy(logits).log_prob(rollout.actions.flatten()).view(8, 4)
    rollout.values = values.view(8, 4)
    advantages = torch.full((8, 4), float("nan"))
    before = [p.detach().clone() for p in policy.parameters()]
    optimizer = torch.optim.Adam(policy.parameters(), lr=1e-3)
    with pytest.raises(NonFiniteLossError, match="non-finite loss at global step 7"):
        ppo_update(policy, optimizer, rollout, advantages, advantages, PPOConfig(), 7)
    assert all(torch.equal(a, b) for a, b in zip(before, policy.parameters()))
