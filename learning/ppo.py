"""The PPO update: clipped surrogate, clipped value loss, entropy bonus, minibatch epochs."""
from __future__ import annotations

import torch
from torch import Tensor, nn
from torch.distributions import Categorical

from config import PPOConfig
from graph_batch import forward_observations
from learning.buffer import Rollout


class NonFiniteLossError(FloatingPointError):
    """A loss, a gradient, the weights or the policy's outputs became NaN or infinite: training
    stops before such weights reach a checkpoint (the last checkpoint stays the last good one)."""


def check_finite_weights(policy: nn.Module, step: int) -> None:
    """Raise ``NonFiniteLossError`` naming ``step`` and the first tensor if a weight is NaN or infinite."""
    for name, parameter in policy.named_parameters():
        if not torch.isfinite(parameter).all():
            raise NonFiniteLossError(f"the weights are no longer finite after global step {step} ({name}): the "
                                     f"update diverged (lower ppo.learning_rate?); no checkpoint was written from them")


def masked_policy(logits: Tensor) -> Categorical:
    """The action distribution. ``PolicyNet`` already set masked logits to the dtype's minimum,
    so masked actions have probability exactly 0, are never sampled, and add exactly 0 to the
    entropy: the entropy is over valid actions only."""
    return Categorical(logits=logits)


def adam(parameters, learning_rate: float) -> torch.optim.Adam:
    """Adam as every training here uses it: CleanRL's eps of 1e-5, and torch's fused step (one
    kernel over all the weights rather than a loop over each tensor: faster, docs/performance.md).
    Its weights differ from the looped step's by float rounding."""
    return torch.optim.Adam(parameters, lr=learning_rate, eps=1e-5, fused=True)


def update_dtype(config: PPOConfig) -> torch.dtype:
    """The float type ``ppo.update_dtype`` names, for ``PolicyNet``'s ``trunk_dtype`` in training passes."""
    return getattr(torch, config.update_dtype)


def explained_variance(predicted: Tensor, target: Tensor) -> float:
    """1 - Var(target - predicted) / Var(target): 1 is perfect, 0 no better than the mean."""
    variance = target.var()
    return float("nan") if variance == 0 else float(1 - (target - predicted).var() / variance)


def ppo_update(
    policy: nn.Module,
    optimizer: torch.optim.Optimizer,
    rollout: Rollout,
    advantages: Tensor,
    returns: Tensor,
    config: PPOConfig,
    step: int,
) -> dict[str, float]:
    """``update_epochs`` passes of minibatch gradient steps over one rollout (CleanRL's ``ppo.py``).

    ``advantages`` and ``returns`` are [T,E], from ``learning.gae.compute_gae``. Returns the last
    minibatch's losses and the run's diagnostics under CleanRL's names. Raises
    ``NonFiniteLossError`` naming ``step`` (the global step) if a loss is not finite, before any
    weight of that minibatch changes.
    """
    device = next(policy.parameters()).device
    batch_size = rollout.num_steps * rollout.num_envs
    minibatch_size = max(1, batch_size // config.num_minibatches)
    dtype = update_dtype(config)

    def flat(x: Tensor) -> Tensor:
        return x.flatten(0, 1).to(device)  # [T,E] -> [T*E]

    old_logprobs, old_values, actions = flat(rollout.logprobs), flat(rollout.values), flat(rollout.actions)
    advantages, returns = flat(advantages), flat(returns)

    clipfracs: list[float] = []
    for _ in range(config.update_epochs):
        for index in torch.randperm(batch_size).split(minibatch_size):
            logits, new_values = forward_observations(policy, rollout.flat_obs(index), config.size_buckets, dtype)
            if not (torch.isfinite(logits).all() and torch.isfinite(new_values).all()):
                raise NonFiniteLossError(f"the policy's outputs are not finite at global step {step}: the update "
                                         f"diverged (lower ppo.learning_rate?); no checkpoint was written from it")
            index = index.to(device)
            dist = masked_policy(logits)
            log_ratio = dist.log_prob(actions[index]) - old_logprobs[index]
            ratio = log_ratio.exp()
            with torch.no_grad():
                approx_kl = ((ratio - 1) - log_ratio).mean()  # the low-variance k3 estimator
                clipfracs.append(((ratio - 1).abs() > config.clip_coef).float().mean().item())

            adv = advantages[index]
            if config.norm_adv and len(index) > 1:
                adv = (adv - adv.mean()) / (adv.std() + 1e-8)
            n = len(index)  # each term a mean over the minibatch, as a sum / n
            policy_loss = torch.max(-adv * ratio, -adv * ratio.clamp(1 - config.clip_coef, 1 + config.clip_coef)).sum() / n

            value_error = (new_values - returns[index]).square()
            if config.clip_vloss:
                clipped = old_values[index] + (new_values - old_values[index]).clamp(-config.clip_coef, config.clip_coef)
                value_error = torch.max(value_error, (clipped - returns[index]).square())
            value_loss = 0.5 * value_error.sum() / n
            entropy = dist.entropy().sum() / n
            loss = policy_loss - config.ent_coef * entropy + config.vf_coef * value_loss
            if not torch.isfinite(loss):
                raise NonFiniteLossError(f"non-finite loss at global step {step} (policy {policy_loss.item()}, "
                                         f"value {value_loss.item()}, entropy {entropy.item()}); weights left as they were")

            optimizer.zero_grad()
            loss.backward()
            grad_norm = nn.utils.clip_grad_norm_(policy.parameters(), config.max_grad_norm)
            if not torch.isfinite(grad_norm):
                raise NonFiniteLossError(f"non-finite gradient at global step {step} (norm {grad_norm.item()}); "
                                         f"this minibatch's step was not taken")
            optimizer.step()
        if config.target_kl and approx_kl > config.target_kl:
            break
    return {
        "policy_loss": policy_loss.item(),
        "value_loss": value_loss.item(),
        "entropy": entropy.item(),
        "approx_kl": approx_kl.item(),
        "clipfrac": sum(clipfracs) / len(clipfracs),
        "explained_variance": explained_variance(old_values.cpu(), returns.cpu()),
    }
