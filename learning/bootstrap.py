"""The state values GAE bootstraps from, chosen once by ``ppo.gae_values``.

``critic``: V(s), the policy's value head. ``greedy_rollout``: W(s), the return the greedy
baseline collects when it plays on from s on the true map (``env.greedy_value.GreedyValue``;
privileged, training only). The collector asks the chosen source for three things per rollout,
and the ``Rollout`` carries exactly those (``bootstrap_values``, ``final_bootstrap_values``,
``next_bootstrap_values``); nothing is computed for the other source.
"""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import torch
from torch import Tensor, nn

from env.greedy_value import GREEDY_VALUE
from graph_batch import forward_each


class CriticValues:
    """V(s) from the critic: the value computed alongside each action, and for final observations."""

    wraps_greedy_value = False

    def start(self, envs: gym.vector.VectorEnv) -> None:
        """Nothing to read from freshly reset or restored envs."""

    def current(self, critic_value: Tensor) -> Tensor:
        """[E] values of the states just acted in."""
        return critic_value

    def final(self, policy: nn.Module, info: dict, truncated: np.ndarray) -> Tensor:
        """[E] V(final observation) of each episode truncated this step, 0 for the other envs."""
        index = np.flatnonzero(truncated)
        final_obs = {key: np.stack([info["final_obs"][i][key] for i in index]) for key in info["final_obs"][index[0]]}
        values = torch.zeros(len(truncated))
        with torch.no_grad():
            values[index] = forward_each(policy, final_obs)[1].cpu()
        return values

    def observe(self, info: dict) -> None:
        """Nothing to track between steps."""

    def next(self, policy: nn.Module, obs: dict) -> Tensor:
        """[E] V of the observations after the rollout's last step."""
        with torch.no_grad():
            return forward_each(policy, obs)[1].cpu()


class GreedyValues:
    """W(s) from the envs' ``GreedyValue`` wrapper, read from reset and step infos."""

    wraps_greedy_value = True

    def __init__(self) -> None:
        self.latest: np.ndarray | None = None  # [E] W of each env's current state

    def start(self, envs: gym.vector.VectorEnv) -> None:
        self.latest = np.array(envs.get_attr(GREEDY_VALUE))

    def current(self, critic_value: Tensor) -> Tensor:
        return torch.as_tensor(self.latest, dtype=torch.float32)

    def final(self, policy: nn.Module, info: dict, truncated: np.ndarray) -> Tensor:
        return torch.as_tensor(np.where(truncated, info["final_info"][GREEDY_VALUE], 0.0), dtype=torch.float32)

    def observe(self, info: dict) -> None:
        self.latest = info[GREEDY_VALUE]  # after an autoreset: W of the new episode's start

    def next(self, policy: nn.Module, obs: dict) -> Tensor:
        return torch.as_tensor(self.latest, dtype=torch.float32)


def bootstrap_values(gae_values: str) -> CriticValues | GreedyValues:
    """The value source ``ppo.gae_values`` names."""
    return GreedyValues() if gae_values == "greedy_rollout" else CriticValues()
