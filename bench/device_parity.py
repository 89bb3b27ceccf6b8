"""The policy on a GPU against the CPU: same outputs and gradients, and what a minibatch costs on each.

    python -m bench.device_parity [--checkpoint pretrained/dungeon.pt] [--states 256] [--repeats 10]
        [--env KEY=VALUE ...]

For a machine with CUDA (exits with status 2 without it). On ``--states`` observations that
envs of the checkpoint's config meet under random moves, it runs the checkpoint's network on
the CPU (float32, ``attention_impl: auto``: the neighbour kernel) and on CUDA (``auto`` there is
SDPA), in float32 and with the trunks under bf16 autocast (``ppo.update_dtype``), and prints for
each how far its logits (valid slots), values and the gradients of a loss on them lie from the
CPU's float32 ones, how often the argmax agrees, and the median milliseconds of a forward and
backward over all the states in 4 size buckets, as the PPO update runs them. The CUDA path is
not covered by the test suite, which runs where there is no GPU: this is its check
(``docs/performance.md``).
"""
from __future__ import annotations

import argparse
import copy
import statistics
import sys
import time
from dataclasses import replace

import numpy as np
import torch
from torch import nn

from env.observation import ACTION_MASK, CURRENT_INDEX, NODE_MASK
from evaluation.play import load_policy
from graph_batch import forward_observations
from learning.envs import make_envs, with_env_overrides

SIZE_BUCKETS = 4


def observations(config, n_states: int, every: int = 4) -> dict[str, torch.Tensor]:
    """``n_states`` observations of the config's envs under random valid moves (seeded), every
    ``every``-th step of each, so that the graphs' sizes spread as in a rollout."""
    envs = make_envs(config.env, config.seed)
    rng = np.random.default_rng(0)
    obs, _ = envs.reset()
    kept: list[dict] = []
    for step in range(n_states * every):
        if len(kept) >= n_states:
            break
        if step % every == 0:
            kept += [{key: value[i] for key, value in obs.items()} for i in range(len(obs[CURRENT_INDEX]))]
        obs, *_ = envs.step(np.array([int(rng.choice(np.flatnonzero(mask))) for mask in obs[ACTION_MASK]]))
    envs.close()
    return {key: torch.as_tensor(np.stack([o[key] for o in kept[:n_states]])) for key in kept[0]}


def outputs_and_grads(policy: nn.Module, obs: dict, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(logits, values, the flattened gradient of logsumexp(valid logits) + values) on the CPU."""
    policy.zero_grad()
    logits, values = forward_observations(policy, obs, SIZE_BUCKETS, dtype)
    valid = obs[ACTION_MASK].to(logits.device).bool()
    (torch.logsumexp(torch.where(valid, logits, -torch.inf), -1) + values).sum().backward()
    grads = torch.cat([p.grad.flatten() for p in policy.parameters() if p.grad is not None])
    return logits.detach().cpu(), values.detach().cpu(), grads.cpu()


def milliseconds(policy: nn.Module, obs: dict, dtype: torch.dtype, repeats: int) -> float:
    """Median ms of ``outputs_and_grads`` over ``repeats`` calls after one warm-up."""
    device = next(policy.parameters()).device
    times = []
    for _ in range(repeats + 1):
        if device.type == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        outputs_and_grads(policy, obs, dtype)
        if device.type == "cuda":
            torch.cuda.synchronize()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times[1:])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", default="pretrained/dungeon.pt")
    parser.add_argument("--states", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                        help="env kwargs override, as evaluate.py's (e.g. map_dir=PATH)")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("no CUDA device: this benchmark compares the CPU with a GPU", file=sys.stderr)
        return 2
    cpu, config = load_policy(args.checkpoint)
    obs = observations(replace(config, env=with_env_overrides(config.env, args.env)), args.states)
    gpu = copy.deepcopy(cpu).cuda()
    print(f"{torch.cuda.get_device_name()}, torch {torch.__version__}; {args.states} states, "
          f"{obs[NODE_MASK].sum(1).float().mean():.0f} nodes on average, up to {int(obs[NODE_MASK].sum(1).max())}")
    reference = outputs_and_grads(cpu, obs, torch.float32)
    valid = obs[ACTION_MASK].bool()
    for name, policy, dtype in (("cpu float32", cpu, torch.float32), ("cpu bf16", cpu, torch.bfloat16),
                                ("cuda float32", gpu, torch.float32), ("cuda bf16", gpu, torch.bfloat16)):
        logits, values, grads = outputs_and_grads(policy, obs, dtype)
        logit_gap = (logits - reference[0]).abs()[valid].max().item()
        value_gap = (values - reference[1]).abs().max().item()
        grad_gap = ((grads - reference[2]).norm() / reference[2].norm()).item()
        agree = (logits.argmax(-1) == reference[0].argmax(-1)).float().mean().item()
        print(f"{name:13} logits within {logit_gap:.2e}, values within {value_gap:.2e}, gradient off by "
              f"{grad_gap:.2e} (relative), argmax agrees on {agree:.1%}; forward + backward "
              f"{milliseconds(policy, obs, dtype, args.repeats):.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
