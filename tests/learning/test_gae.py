"""GAE against values worked out by hand."""
import pytest
import torch

from learning.gae import compute_gae

GAMMA, LAMBDA = 0.9, 0.5


def column(*xs, dtype=torch.float32):
    return torch.tensor(xs, dtype=dtype).unsqueeze(1)  # [T,1]


def test_terminated_episode_does_not_bootstrap_and_resets_the_trace():
    # Steps 0-1 end with termination at step 1; step 2 starts a new episode, cut by the rollout.
    rewards, values = column(1.0, 2.0, 3.0), column(0.5, 1.0, 2.0)
    terminated = column(False, True, False, dtype=torch.bool)
    truncated = column(False, False, False, dtype=torch.bool)
    adv, ret = compute_gae(rewards, values, terminated, truncated, torch.zeros(3, 1), torch.tensor([4.0]), GAMMA, LAMBDA)
    d2 = 3.0 + GAMMA * 4.0 - 2.0  # 4.6: bootstraps from next_value
    d1 = 2.0 + 0.0 - 1.0  # 1.0: terminated, no bootstrap
    d0 = 1.0 + GAMMA * 1.0 - 0.5  # 1.4
    expected = [d0 + GAMMA * LAMBDA * d1, d1, d2]  # the trace stops at the termination
    torch.testing.assert_close(adv.flatten(), torch.tensor(expected))
    torch.testing.assert_close(ret, adv + values)


def test_truncated_episode_bootstraps_from_its_final_observation():
    rewards, values = column(1.0, 2.0, 3.0), column(0.5, 1.0, 2.0)
    terminated = column(False, False, False, dtype=torch.bool)
    truncated = column(False, True, False, dtype=torch.bool)
    final_values = column(0.0, 10.0, 0.0)  # V(final obs of the truncated episode)
    adv, _ = compute_gae(rewards, values, terminated, truncated, final_values, torch.tensor([4.0]), GAMMA, LAMBDA)
    d2 = 3.0 + GAMMA * 4.0 - 2.0
    d1 = 2.0 + GAMMA * 10.0 - 1.0  # bootstraps from the final observation, not from step 2's value
    d0 = 1.0 + GAMMA * 1.0 - 0.5
    torch.testing.assert_close(adv.flatten(), torch.tensor([d0 + GAMMA * LAMBDA * d1, d1, d2]))


def test_lambda_one_gives_discounted_returns_minus_values():
    rewards = torch.rand(5, 3)
    values = torch.rand(5, 3)
    no = torch.zeros(5, 3, dtype=torch.bool)
    adv, ret = compute_gae(rewards, values, no, no, torch.zeros(5, 3), torch.zeros(3), GAMMA, 1.0)
    expected = torch.zeros(3)
    returns = []
    for t in reversed(range(5)):
        expected = rewards[t] + GAMMA * expected
        returns.insert(0, expected)
    torch.testing.assert_close(ret, torch.stack(returns))


@pytest.mark.parametrize("flag", ["terminated", "truncated"])
def test_an_episode_end_in_one_env_leaves_the_others_alone(flag):
    rewards, values, final_values, next_value = torch.rand(4, 2), torch.rand(4, 2), torch.rand(4, 2), torch.rand(2)
    flags = {"terminated": torch.zeros(4, 2, dtype=torch.bool), "truncated": torch.zeros(4, 2, dtype=torch.bool)}
    flags[flag][1, 0] = True
    adv, _ = compute_gae(rewards, values, flags["terminated"], flags["truncated"], final_values, next_value, GAMMA, LAMBDA)
    no = torch.zeros(4, 1, dtype=torch.bool)
    alone, _ = compute_gae(rewards[:, 1:], values[:, 1:], no, no, final_values[:, 1:], next_value[1:], GAMMA, LAMBDA)
    torch.testing.assert_close(adv[:, 1:], alone)
    with_end, _ = compute_gae(rewards[:, :1], values[:, :1], no, no, final_values[:, :1], next_value[:1], GAMMA, LAMBDA)
    assert not torch.allclose(adv[:, :1], with_end)  # env 0 itself did change
