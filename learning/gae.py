"""Generalised advantage estimation with terminated and truncated episodes kept apart."""
from __future__ import annotations

import torch
from torch import Tensor


def compute_gae(
    rewards: Tensor,
    values: Tensor,
    terminated: Tensor,
    truncated: Tensor,
    final_values: Tensor,
    next_value: Tensor,
    gamma: float,
    gae_lambda: float,
) -> tuple[Tensor, Tensor]:
    r"""Advantages and returns of a rollout of T steps from E envs.

    .. math::
        \delta_t = r_t + \gamma\, V_{next}(t) - V(s_t), \qquad
        A_t = \delta_t + \gamma \lambda\, (1 - \mathrm{ended}_t)\, A_{t+1}

    where :math:`V_{next}(t)` is 0 if the episode terminated at step t (nothing follows a
    finished exploration), the value of the episode's final observation if it was truncated (the
    time limit cut an unfinished exploration short, so its future is estimated, not zero), and
    otherwise :math:`V(s_{t+1})`, with ``next_value`` after the last step.

    Args:
        rewards, values: [T,E] float. terminated, truncated: [T,E] bool, flags of step t.
        final_values: [T,E] float, V(final observation) where ``truncated`` (ignored elsewhere).
        next_value: [E] float, V of the observation after step T-1.

    Returns:
        ``(advantages [T,E], returns [T,E])`` with returns = advantages + values.
    """
    T = rewards.shape[0]
    ended = terminated | truncated
    following = torch.cat([values[1:], next_value.unsqueeze(0)])  # V(s_{t+1}) [T,E]
    next_values = torch.where(truncated, final_values, following)
    next_values = torch.where(terminated, torch.zeros_like(next_values), next_values)
    deltas = rewards + gamma * next_values - values
    advantages = torch.zeros_like(rewards)
    running = torch.zeros_like(rewards[0])
    for t in reversed(range(T)):
        running = deltas[t] + gamma * gae_lambda * (~ended[t]) * running
        advantages[t] = running
    return advantages, advantages + values
