"""Rollout storage: named [T,E,...] tensors, filled step by step, flattened for the update."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
from torch import Tensor


@dataclass
class Rollout:
    """One rollout of ``num_steps`` (T) steps from ``num_envs`` (E) envs, kept on the CPU.

    Observations are stored in the env's padded layout ([T,E,N_max,...]), which costs O(N*K)
    per step: the dense [N,N] adjacency is rebuilt inside the policy's forward pass.
    """

    num_steps: int
    num_envs: int
    obs: dict[str, Tensor] = field(default_factory=dict)
    actions: Tensor = field(init=False)
    logprobs: Tensor = field(init=False)
    values: Tensor = field(init=False)
    rewards: Tensor = field(init=False)
    terminated: Tensor = field(init=False)
    truncated: Tensor = field(init=False)
    final_values: Tensor = field(init=False)
    """V(final observation) at steps where the episode was truncated, 0 elsewhere."""
    greedy_values: Tensor = field(init=False)
    """W(s_t), greedy's return from the state on the true map, when the run uses it (else 0)."""
    greedy_final_values: Tensor = field(init=False)
    """W(final observation) at steps where the episode was truncated, 0 elsewhere."""

    def __post_init__(self) -> None:
        T, E = self.num_steps, self.num_envs
        self.actions = torch.zeros(T, E, dtype=torch.long)
        (self.logprobs, self.values, self.rewards, self.final_values, self.greedy_values,
         self.greedy_final_values) = (torch.zeros(T, E) for _ in range(6))
        self.terminated = torch.zeros(T, E, dtype=torch.bool)
        self.truncated = torch.zeros(T, E, dtype=torch.bool)

    def store_obs(self, t: int, obs: dict[str, np.ndarray]) -> None:
        for key, value in obs.items():
            value = torch.as_tensor(value)
            if key not in self.obs:
                self.obs[key] = torch.zeros((self.num_steps, *value.shape), dtype=value.dtype)
            self.obs[key][t] = value

    def flat_obs(self, index: Tensor) -> dict[str, Tensor]:
        """Observations of flattened steps ``index`` (into T*E), batched as [len(index),...]."""
        return {key: value.flatten(0, 1)[index] for key, value in self.obs.items()}
