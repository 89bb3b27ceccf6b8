"""Rollout storage: named [T,E,...] tensors, filled step by step, flattened for the update."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
from torch import Tensor

from learning.progress import FinishedEpisode


@dataclass
class Rollout:
    """One rollout of ``num_steps`` (T) steps from ``num_envs`` (E) envs, kept on the CPU.

    Observations are stored in the env's padded layout ([T,E,N_max,...]), which costs O(N*K)
    per step: the dense [N,N] adjacency is rebuilt when a minibatch is collated.
    """

    num_steps: int
    num_envs: int
    obs: dict[str, Tensor] = field(default_factory=dict)
    actions: Tensor = field(init=False)
    logprobs: Tensor = field(init=False)
    values: Tensor = field(init=False)
    """The critic's V(s_t) when the action was taken: the value loss is clipped around it."""
    rewards: Tensor = field(init=False)
    terminated: Tensor = field(init=False)
    truncated: Tensor = field(init=False)
    bootstrap_values: Tensor = field(init=False)
    """The values GAE bootstraps from (``learning.bootstrap``): V(s_t) under ``critic``, W(s_t) under ``greedy_rollout``."""
    final_bootstrap_values: Tensor = field(init=False)
    """The same value of the final observation at steps where the episode was truncated, 0 elsewhere."""
    next_bootstrap_values: Tensor = field(init=False)
    """[E], the same value of the observation after the last step."""
    episodes: list[FinishedEpisode] = field(default_factory=list)
    """The episodes that ended during the rollout, in the order they ended."""

    TENSORS = ("actions", "logprobs", "values", "rewards", "terminated", "truncated", "bootstrap_values",
               "final_bootstrap_values", "next_bootstrap_values")
    """The fields besides ``obs`` that hold a tensor: [T,E], or [E] for ``next_bootstrap_values``."""

    def __post_init__(self) -> None:
        T, E = self.num_steps, self.num_envs
        self.actions = torch.zeros(T, E, dtype=torch.long)
        self.logprobs, self.values, self.rewards, self.bootstrap_values, self.final_bootstrap_values = (
            torch.zeros(T, E) for _ in range(5))
        self.terminated = torch.zeros(T, E, dtype=torch.bool)
        self.truncated = torch.zeros(T, E, dtype=torch.bool)
        self.next_bootstrap_values = torch.zeros(E)

    def store_obs(self, t: int, obs: dict[str, np.ndarray]) -> None:
        for key, value in obs.items():
            value = torch.as_tensor(value)
            if key not in self.obs:
                self.obs[key] = torch.zeros((self.num_steps, *value.shape), dtype=value.dtype)
            self.obs[key][t] = value

    @classmethod
    def join(cls, parts: list["Rollout"]) -> "Rollout":
        """Rollouts of consecutive slices of envs (same T) as one over all of them, as if one
        collector had stepped every env: tensors joined on the env axis, episodes in step order."""
        joined = cls(parts[0].num_steps, sum(part.num_envs for part in parts))
        joined.obs = {key: torch.cat([part.obs[key] for part in parts], dim=1) for key in parts[0].obs}
        for name in cls.TENSORS:
            setattr(joined, name, torch.cat([getattr(part, name) for part in parts], dim=-1))
        # Within a step a vector env reports episodes in env order: slices in order, then a stable sort.
        joined.episodes = sorted((e for part in parts for e in part.episodes), key=lambda e: e.step)
        return joined

    def nbytes(self) -> int:
        """The size of every tensor in it: what a rollout worker sends back per update."""
        tensors = [*self.obs.values(), *(getattr(self, name) for name in self.TENSORS)]
        return sum(t.numel() * t.element_size() for t in tensors)

    def flat_obs(self, index: Tensor) -> dict[str, Tensor]:
        """Observations of flattened steps ``index`` (into T*E), batched as [len(index),...]."""
        return {key: value.flatten(0, 1)[index] for key, value in self.obs.items()}
