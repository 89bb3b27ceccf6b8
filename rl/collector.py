"""Collectors: (policy weights, envs) -> a ``Rollout`` of ``num_steps`` steps from every env.

The seam the training loop collects through. ``VectorEnvCollector`` steps a gymnasium vector env
in this process; a collector on other workers (Ray actors, each a slice of the envs) implements
the same three methods. Envs are seeded by their global index (``rl.envs.SeededEpisodes``), so
a rollout does not depend on how the envs are split.
"""
from __future__ import annotations

from typing import Protocol

import torch
from torch import nn

from config import Config
from graph_batch import forward_observations
from rl.bootstrap import bootstrap_values
from rl.buffer import Rollout
from rl.envs import make_envs, restore_envs
from rl.episodes import EpisodeProgress
from rl.ppo import NonFiniteLossError, masked_policy


class Collector(Protocol):
    def collect(self, policy: nn.Module) -> Rollout:
        """``num_steps`` steps from every env, actions sampled from ``policy`` (its current weights)."""

    def progress(self) -> EpisodeProgress:
        """Each env's place in its episode schedule, for a checkpoint."""

    def close(self) -> None:
        """Release the envs (and workers)."""


class VectorEnvCollector:
    """Every env in one gymnasium Sync or Async vector env (``env.vector``), in this process.

    Started fresh, or, given the ``EpisodeProgress`` of a checkpoint, with every env replayed to
    where it was.
    """

    def __init__(self, config: Config, progress: EpisodeProgress | None = None):
        self.num_steps = config.ppo.num_steps
        self.bootstrap = bootstrap_values(config.ppo.gae_values)
        self.envs = make_envs(config.env, config.seed, greedy_value=self.bootstrap.wraps_greedy_value)
        if progress is None:
            self._progress = EpisodeProgress.start(config.env.num_envs)
            self.obs, _ = self.envs.reset()
        else:
            self._progress = progress
            self.obs = restore_envs(self.envs, progress.episodes, progress.actions)
        self.bootstrap.start(self.envs)

    def collect(self, policy: nn.Module) -> Rollout:
        rollout = Rollout(self.num_steps, self.envs.num_envs)
        policy.eval()
        for t in range(self.num_steps):
            with torch.no_grad():
                logits, value = forward_observations(policy, self.obs)
                if not (torch.isfinite(logits).all() and torch.isfinite(value).all()):
                    raise NonFiniteLossError("the policy's outputs are not finite while collecting a rollout: "
                                             "its weights have diverged (lower ppo.learning_rate?)")
                dist = masked_policy(logits)
                action = dist.sample()
            rollout.store_obs(t, self.obs)
            rollout.actions[t], rollout.logprobs[t], rollout.values[t] = action.cpu(), dist.log_prob(action).cpu(), value.cpu()
            rollout.bootstrap_values[t] = self.bootstrap.current(value.cpu())

            self.obs, reward, terminated, truncated, info = self.envs.step(action.cpu().numpy())
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
