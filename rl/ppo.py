"""The PPO update: clipped surrogate, clipped value loss, entropy bonus, minibatch epochs."""
from __future__ import annotations

import functools
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import torch
from torch import Tensor, nn
from torch.distributions import Categorical

from config import PPOConfig
from graph_batch import forward_observations, torch_threads
from rl.buffer import Rollout


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
    kernel over all the weights rather than a loop over 92 tensors: 2.5 against 9.4 ms a step on
    2 cores, docs/performance.md). Its weights differ from the looped step's by float rounding."""
    return torch.optim.Adam(parameters, lr=learning_rate, eps=1e-5, fused=True)


def update_dtype(config: PPOConfig) -> torch.dtype:
    """The float type ``ppo.update_dtype`` names, for ``PolicyNet``'s ``trunk_dtype`` in training passes."""
    return getattr(torch, config.update_dtype)


def explained_variance(predicted: Tensor, target: Tensor) -> float:
    """1 - Var(target - predicted) / Var(target): 1 is perfect, 0 no better than the mean."""
    variance = target.var()
    return float("nan") if variance == 0 else float(1 - (target - predicted).var() / variance)


def update_parts(config: PPOConfig, device: torch.device) -> int:
    """How many parts each minibatch of an update is split into, each on a thread of its own
    (``ppo.update_threads``): at most one per torch thread, and one on a GPU."""
    if device.type != "cpu":
        return 1
    return max(1, min(config.update_threads, torch.get_num_threads()))


@dataclass
class PartLoss:
    """What one part of a minibatch gives back: the gradient of its share of the minibatch's loss
    for each parameter (None where the loss does not reach it), and that share's terms, detached."""
    gradients: tuple[Tensor | None, ...]
    policy_loss: Tensor
    value_loss: Tensor
    entropy: Tensor
    log_ratio: Tensor
    """[n] log pi_new(a|s) - log pi_old(a|s) of the part's states."""


def summed(gradients: tuple[Tensor | None, ...]) -> Tensor | None:
    """The parts' gradients of one parameter added in the parts' order (a fixed order: the same
    bits every time), or None if no part's loss reaches it."""
    present = [gradient for gradient in gradients if gradient is not None]
    return functools.reduce(torch.add, present) if present else None


def ppo_update(
    policy: nn.Module,
    optimizer: torch.optim.Optimizer,
    rollout: Rollout,
    advantages: Tensor,
    returns: Tensor,
    config: PPOConfig,
    step: int,
) -> dict[str, float]:
    """``update_epochs`` passes of minibatch gradient steps over one rollout.

    ``advantages`` and ``returns`` are [T,E], from ``rl.gae.compute_gae``. Returns the last
    minibatch's losses and the run's diagnostics under CleanRL's names. Raises
    ``NonFiniteLossError`` naming ``step`` (the global step) if a loss is not finite, before any
    weight of that minibatch changes.

    Each minibatch's loss is a mean over its states, so it is the sum of its parts' losses, each
    part's terms summed and divided by the minibatch's size: the parts (``update_parts``) run their
    forward and backward passes on threads of their own, and their gradients are added before the
    step. One part is CleanRL's update; more change only the order of float sums.
    """
    device = next(policy.parameters()).device
    parameters = list(policy.parameters())
    batch_size = rollout.num_steps * rollout.num_envs
    minibatch_size = max(1, batch_size // config.num_minibatches)
    parts = update_parts(config, device)

    def flat(x: Tensor) -> Tensor:
        return x.flatten(0, 1).to(device)  # [T,E] -> [T*E]

    old_logprobs, old_values, actions = flat(rollout.logprobs), flat(rollout.values), flat(rollout.actions)
    advantages, returns = flat(advantages), flat(returns)
    dtype = update_dtype(config)

    def part_loss(index: Tensor, adv: Tensor, n: int) -> PartLoss:
        """The loss of the minibatch's states ``index`` (their advantages ``adv``), as their share of
        the mean over the minibatch's ``n`` states, and its gradients."""
        logits, new_values = forward_observations(policy, rollout.flat_obs(index), config.size_buckets, dtype)
        if not (torch.isfinite(logits).all() and torch.isfinite(new_values).all()):
            raise NonFiniteLossError(f"the policy's outputs are not finite at global step {step}: the update "
                                     f"diverged (lower ppo.learning_rate?); no checkpoint was written from it")
        index = index.to(device)
        dist = masked_policy(logits)
        log_ratio = dist.log_prob(actions[index]) - old_logprobs[index]
        ratio = log_ratio.exp()
        policy_loss = torch.max(-adv * ratio, -adv * ratio.clamp(1 - config.clip_coef, 1 + config.clip_coef)).sum() / n

        value_error = (new_values - returns[index]).square()
        if config.clip_vloss:
            clipped = old_values[index] + (new_values - old_values[index]).clamp(-config.clip_coef, config.clip_coef)
            value_error = torch.max(value_error, (clipped - returns[index]).square())
        value_loss = 0.5 * value_error.sum() / n
        entropy = dist.entropy().sum() / n
        loss = policy_loss - config.ent_coef * entropy + config.vf_coef * value_loss
        if not torch.isfinite(loss):
            raise NonFiniteLossError(
                f"non-finite loss at global step {step} (policy {policy_loss.item()}, "
                f"value {value_loss.item()}, entropy {entropy.item()}); weights left as they were"
            )
        gradients = torch.autograd.grad(loss, parameters, allow_unused=True)
        return PartLoss(gradients, policy_loss.detach(), value_loss.detach(), entropy.detach(), log_ratio.detach())

    clipfracs: list[float] = []
    # The threads are started inside torch_threads, so each runs its part on its share of torch's threads.
    with torch_threads(torch.get_num_threads() // parts), ThreadPoolExecutor(parts) as pool:
        apply = pool.map if parts > 1 else map  # one part runs here, as a plain update
        for _ in range(config.update_epochs):
            for index in torch.randperm(batch_size).split(minibatch_size):
                adv = advantages[index]
                if config.norm_adv and len(index) > 1:
                    adv = (adv - adv.mean()) / (adv.std() + 1e-8)
                pieces = min(parts, len(index))
                split = zip(index.tensor_split(pieces), adv.tensor_split(pieces))
                losses = list(apply(lambda part: part_loss(*part, len(index)), split))
                for parameter, gradients in zip(parameters, zip(*(part.gradients for part in losses))):
                    parameter.grad = summed(gradients)
                policy_loss, value_loss, entropy = (sum(getattr(part, term) for part in losses)
                                                    for term in ("policy_loss", "value_loss", "entropy"))
                with torch.no_grad():
                    log_ratio = torch.cat([part.log_ratio for part in losses])
                    ratio = log_ratio.exp()
                    approx_kl = ((ratio - 1) - log_ratio).mean()  # the low-variance k3 estimator
                    clipfracs.append(((ratio - 1).abs() > config.clip_coef).float().mean().item())

                grad_norm = nn.utils.clip_grad_norm_(parameters, config.max_grad_norm)
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
