"""Collectors: (policy weights, envs) -> a ``Rollout`` of ``num_steps`` steps from every env.

The seam the training loop collects through (``Collector``). ``VectorEnvCollector`` steps a
gymnasium vector env in this process; ``learning.worker_processes.ProcessCollector`` and
``cluster.rollout_actors.RayCollector`` give slices of the envs to processes or Ray actors, each
running one, and ``learning.choose_collector`` picks one of the three by ``env.vector``. Two
things make a rollout independent of how the envs are split into whole forward groups
(``env.forward_group``): env ``i`` is seeded by its global index (``learning.envs.SeededEpisodes``),
and its action is sampled from its group's forward pass (``graph_batch.forward_groups``) with a
seed drawn from where it is (``run.seeding.action_seed``).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import torch
from torch import Tensor, nn

from config import Config
from graph_batch import consecutive_groups, forward_groups, one_torch_thread
from learning.bootstrap import bootstrap_values
from learning.buffer import Rollout
from learning.envs import make_envs, restore_envs
from learning.ppo import NonFiniteLossError, masked_policy
from learning.progress import EpisodeProgress
from run.seeding import action_seed


class Collector(Protocol):
    def collect(self, policy: nn.Module) -> Rollout:
        """``num_steps`` steps from every env, actions sampled from ``policy`` (its current weights)."""

    def progress(self) -> EpisodeProgress:
        """Each env's place in its episode schedule, for a checkpoint."""

    def close(self) -> None:
        """Release the envs (and workers)."""


def sample_actions(policy: nn.Module, obs: dict, seeds: Sequence[int],
                   groups: Sequence[range] | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """One action per env from its group's forward pass (``graph_batch.forward_groups``; default:
    a pass per env) and its own seed: (actions [E], log-probs [E], values [E])."""
    groups = [range(i, i + 1) for i in range(len(seeds))] if groups is None else groups
    with torch.no_grad():
        logits, values = forward_groups(policy, obs, groups)
        if not (torch.isfinite(logits).all() and torch.isfinite(values).all()):
            raise NonFiniteLossError("the policy's outputs are not finite while collecting a rollout: "
                                     "its weights have diverged (lower ppo.learning_rate?)")
        dist = masked_policy(logits)
        actions = torch.cat([torch.multinomial(probs, 1, generator=torch.Generator().manual_seed(seed))
                             for probs, seed in zip(dist.probs.cpu(), seeds)])  # masked slots have probability 0
        return actions, dist.log_prob(actions.to(logits.device)).cpu(), values.cpu()


class VectorEnvCollector:
    """The run's envs ``env_indices`` (default: all) in one gymnasium vector env in this process.

    Started fresh, or, given the ``EpisodeProgress`` of those envs (from a checkpoint), with each
    env replayed to where it was. The worker processes and Ray actors each run one over their slice.
    """

    def __init__(self, config: Config, progress: EpisodeProgress | None = None,
                 env_indices: Sequence[int] | None = None):
        self.num_steps, self.run_seed = config.ppo.num_steps, config.seed
        self.env_indices = list(range(config.env.num_envs) if env_indices is None else env_indices)
        self.groups = consecutive_groups(self.env_indices, config.env.forward_group)  # positions sharing a pass
        self.bootstrap = bootstrap_values(config.ppo.gae_values)
        self.envs = make_envs(config.env, config.seed, self.bootstrap.wraps_greedy_value, self.env_indices)
        if progress is None:
            self._progress = EpisodeProgress.start(len(self.env_indices))
            self.obs, _ = self.envs.reset()
        else:
            self._progress = progress
            self.obs = restore_envs(self.envs, progress, self.env_indices)
        self.bootstrap.start(self.envs)

    def collect(self, policy: nn.Module) -> Rollout:
        rollout = Rollout(self.num_steps, self.envs.num_envs)
        policy.eval()
        with one_torch_thread():  # as forward_groups would per call: switched once, not per step
            for t in range(self.num_steps):
                seeds = [action_seed(self.run_seed, i, episode, len(actions)) for i, episode, actions
                         in zip(self.env_indices, self._progress.episodes, self._progress.actions)]
                action, rollout.logprobs[t], value = sample_actions(policy, self.obs, seeds, self.groups)
                rollout.store_obs(t, self.obs)
                rollout.actions[t], rollout.values[t] = action, value
                rollout.bootstrap_values[t] = self.bootstrap.current(value)

                self.obs, reward, terminated, truncated, info = self.envs.step(action.numpy())
                rollout.rewards[t] = torch.as_tensor(reward, dtype=torch.float32)
                rollout.terminated[t], rollout.truncated[t] = torch.as_tensor(terminated), torch.as_tensor(truncated)
                if truncated.any():
                    rollout.final_bootstrap_values[t] = self.bootstrap.final(policy, info, truncated)
                self.bootstrap.observe(info)
                rollout.episodes += self._progress.record_step(t, action.tolist(), reward, terminated, truncated,
                                                               info.get("final_info"))
            rollout.next_bootstrap_values = self.bootstrap.next(policy, self.obs)
        return rollout

    def progress(self) -> EpisodeProgress:
        return self._progress

    def close(self) -> None:
        self.envs.close()


def contiguous_slices(n: int, parts: int) -> list[range]:
    """``range(n)`` cut into ``parts`` contiguous slices, as even as can be: 10, 3 -> 4, 3, 3."""
    size, extra = divmod(n, parts)
    starts = [w * size + min(w, extra) for w in range(parts + 1)]
    return [range(starts[w], starts[w + 1]) for w in range(parts)]


def group_slices(n: int, group: int, parts: int) -> list[range]:
    """``range(n)`` in ``parts`` contiguous slices of whole groups of ``group`` (the last group may
    be smaller), as even in groups as can be: 10, 4, 2 -> 0-7, 8-9 (groups 0-3, 4-7, 8-9)."""
    return [range(s.start * group, min(s.stop * group, n)) for s in contiguous_slices(-(-n // group), parts)]
