"""Collectors: a rollout does not depend on how the envs are split, and actions follow the policy."""
import dataclasses
from multiprocessing import Pipe

import numpy as np
import pytest
import torch

import graph_batch
import learning.collector
import learning.envs
from graph_batch import consecutive_groups, forward_each, forward_groups, forward_observations
from learning.buffer import Rollout
from learning.collector import VectorEnvCollector, contiguous_slices, group_slices, sample_actions
from learning.progress import EpisodeProgress
from policy import PolicyNet
from tests.helpers import assert_same_rollout, observations, smoke_config


def collect_split(config, policy, slices, rollouts, progress=None):
    """``rollouts`` rollouts from collectors over consecutive env slices, joined."""
    firsts = [sum(slices[:i]) for i in range(len(slices))]
    parts = [VectorEnvCollector(config, None if progress is None else progress.slice(first, count),
                                range(first, first + count)) for first, count in zip(firsts, slices)]
    joined = [Rollout.join([part.collect(policy) for part in parts]) for _ in range(rollouts)]
    progress = EpisodeProgress.join([part.progress() for part in parts])
    for part in parts:
        part.close()
    return joined, progress


@pytest.mark.parametrize("gae_values", ["critic", "greedy_rollout"])
def test_slices_of_the_envs_joined_give_the_rollout_of_all_of_them(tmp_path, gae_values):
    config = smoke_config(tmp_path, "env.num_envs=4", "env.kwargs.max_steps=8", f"ppo.gae_values={gae_values}")
    torch.manual_seed(0)
    policy = PolicyNet(config.model)
    whole, progress = collect_split(config, policy, [4], rollouts=2)
    assert any(r.truncated.any() for r in whole) and any(r.episodes for r in whole)  # autoresets were crossed
    for slices in ([2, 2], [1, 3], [1, 1, 1, 1]):
        torch.manual_seed(123)  # the global RNG plays no part in sampling
        split, split_progress = collect_split(config, policy, slices, rollouts=2)
        for a, b in zip(whole, split):
            assert_same_rollout(a, b)
        assert split_progress == progress
    # Restored from the places after the first rollout, slices replay into the second one.
    first, after_first = collect_split(config, policy, [4], rollouts=1)
    assert_same_rollout(first[0], whole[0])
    resumed, _ = collect_split(config, policy, [3, 1], rollouts=1, progress=after_first)
    assert_same_rollout(resumed[0], whole[1])


def test_forward_each_is_row_independent_and_agrees_with_a_batched_call():
    torch.manual_seed(0)
    policy = PolicyNet(dataclasses.replace(smoke_config("unused").model, embed_dim=32, n_heads=4)).eval()
    obs = observations(6, seed=3)
    with torch.no_grad():
        logits, values = forward_each(policy, obs)
        for i in (0, 5):
            alone = forward_each(policy, {key: value[i:i + 1] for key, value in obs.items()})
            assert torch.equal(alone[0][0], logits[i]) and torch.equal(alone[1][0], values[i])
        batched = forward_observations(policy, obs)
    torch.testing.assert_close(logits, batched[0])
    torch.testing.assert_close(values, batched[1])


def test_a_groups_rows_depend_on_that_group_alone_and_equal_its_own_batched_call():
    torch.manual_seed(0)
    policy = PolicyNet(dataclasses.replace(smoke_config("unused").model, embed_dim=32, n_heads=4)).eval()
    obs, other = observations(6, seed=3), observations(6, seed=4)
    groups = [range(0, 4), range(4, 6)]
    with torch.no_grad():
        logits, values = forward_groups(policy, obs, groups)
        with graph_batch.one_torch_thread():  # forward_groups' own thread count: another rounds differently
            first = policy(graph_batch.collate({key: value[:4] for key, value in obs.items()}))
        assert torch.equal(logits[:4], first[0]) and torch.equal(values[:4], first[1])
        # Another second group (other graphs, other sizes) leaves the first group's bits alone.
        mixed = {key: np.concatenate([obs[key][:4], other[key][4:]]) for key in obs}
        changed = forward_groups(policy, mixed, groups)
        assert torch.equal(changed[0][:4], logits[:4]) and torch.equal(changed[1][:4], values[:4])
        assert not torch.equal(changed[0][4:], logits[4:])
        torch.testing.assert_close(logits, forward_each(policy, obs)[0])  # the same policy, up to rounding
    with pytest.raises(ValueError, match=r"do not cover the 6 observations in order"):
        forward_groups(policy, obs, [range(0, 4)])


def test_consecutive_groups_follow_the_global_env_index():
    assert consecutive_groups([0, 1, 2, 3, 4, 5], 4) == [range(0, 4), range(4, 6)]
    assert consecutive_groups([4, 5, 6, 7, 8], 4) == [range(0, 4), range(4, 5)]
    assert consecutive_groups([2, 3], 1) == [range(0, 1), range(1, 2)]


def test_group_slices_take_whole_groups():
    assert group_slices(10, 4, 2) == [range(0, 8), range(8, 10)]
    assert group_slices(8, 4, 2) == [range(0, 4), range(4, 8)]
    assert group_slices(7, 2, 3) == [range(0, 4), range(4, 6), range(6, 7)]
    assert group_slices(5, 1, 2) == contiguous_slices(5, 2)


def test_envs_act_from_their_groups_pass_however_the_groups_are_split(tmp_path, monkeypatch):
    config = smoke_config(tmp_path, "env.num_envs=4", "env.forward_group=2", "env.kwargs.max_steps=8",
                          "env.vector=sync")
    torch.manual_seed(0)
    policy = PolicyNet(config.model)
    passes = []
    def recording(policy, obs, groups):
        passes.append([len(group) for group in groups])
        return forward_groups(policy, obs, groups)
    monkeypatch.setattr(learning.collector, "forward_groups", recording)
    whole, _ = collect_split(config, policy, [4], rollouts=2)
    assert set(map(tuple, passes)) == {(2, 2)}  # one pass per group of two
    passes.clear()
    split, _ = collect_split(config, policy, [2, 2], rollouts=2)
    assert set(map(tuple, passes)) == {(2,)}  # each slice one group: one pass of two
    for a, b in zip(whole, split):
        assert_same_rollout(a, b)


def test_sampled_actions_follow_the_policy_and_never_take_a_masked_slot():
    torch.manual_seed(0)
    policy = PolicyNet(smoke_config("unused").model).eval()
    obs = observations(1, seed=5)
    with torch.no_grad():
        probs = torch.softmax(forward_each(policy, obs)[0][0], -1)
    n = 4000  # the same state in n envs, each sampling with its own seed, in one forward pass
    copies = {key: np.repeat(value, n, axis=0) for key, value in obs.items()}
    actions, logprobs, _ = sample_actions(policy, copies, range(n), [range(n)])
    counts = torch.bincount(actions, minlength=len(probs)).to(probs.dtype)
    assert logprobs == pytest.approx(probs[actions].log(), abs=1e-5)
    assert (counts[probs == 0] == 0).all() and (probs > 0).sum() >= 2
    # Each frequency within 4 standard errors of its probability.
    assert ((counts / n - probs).abs() <= 4 * (probs * (1 - probs) / n).sqrt() + 1e-9).all(), (counts / n, probs)
    assert sample_actions(policy, obs, [7])[0] == sample_actions(policy, obs, [7])[0]


def test_contiguous_slices_are_contiguous_and_even():
    assert contiguous_slices(10, 3) == [range(0, 4), range(4, 7), range(7, 10)]
    assert contiguous_slices(2, 2) == [range(0, 1), range(1, 2)]
    assert [i for s in contiguous_slices(7, 4) for i in s] == list(range(7))


class PipesOnly:
    """A stand-in for a paused ``VectorEnvCollector``: just the pipes its envs answer on."""

    def __init__(self, n_envs):
        self.ends = [Pipe() for _ in range(n_envs)]  # (ours, the env's)

    def unanswered_pipes(self):
        return [ours for ours, _ in self.ends if not ours.poll()]

    def answer(self, env):
        self.ends[env][1].send("step")
