"""Where a training update's time goes: the rollout, GAE, and the PPO update's forward, backward and optimizer.

    python -m bench.update_split [--config configs/default.yaml] [--updates 3] [key=value ...]

Runs ``--updates`` updates of ``train.py``'s loop (``rl.trainer.Trainer.train``, a fresh run in a
temporary folder, no images) under ``cProfile`` and prints, per phase, the wall seconds per update
and the share of the whole loop. The rollout splits into the policy's forward passes (sampling
actions), W (``ppo.gae_values: greedy_rollout``: greedy's play-outs, ``env/greedy_value.py``) and
the rest (the envs' steps and resets, bookkeeping). With ``env.vector: async`` the envs, W
included, run in their own processes, unprofiled: the rest is then mostly the wait for them.
``env.vector=sync`` shows W. The update splits into the minibatch forward
passes, the backward passes, gradient clipping, the optimizer step and the rest (losses, checks).
cProfile sees only the thread it runs in, so the update runs as one pass here
(``ppo.update_threads=1``, whatever the config says; docs/performance.md, "The update split over
threads"). cProfile adds a little to every Python call, so the split is a guide, not a timing; run it alone.
"""
from __future__ import annotations

import argparse
import cProfile
import pstats
import tempfile
from pathlib import Path

from config import load_config
from rl.trainer import Trainer

# (phase, part of, file name ending, function name): cumulative time of that function.
PHASES = (
    ("rollout", None, "rl/collector.py", "collect"),
    ("policy forward", "rollout", "rl/collector.py", "sample_actions"),
    ("W: greedy's play-outs", "rollout", "env/greedy_value.py", "_replan"),
    ("GAE", None, "rl/gae.py", "compute_gae"),
    ("PPO update", None, "rl/ppo.py", "ppo_update"),
    ("forward", "PPO update", "graph_batch.py", "forward_observations"),
    ("backward", "PPO update", "torch/autograd/__init__.py", "grad"),
    ("clip_grad_norm_", "PPO update", "torch/nn/utils/clip_grad.py", "clip_grad_norm_"),
    ("optimizer step", "PPO update", "torch/optim/adam.py", "step"),
    ("logging", None, "rl/trainer.py", "_log"),
    ("checkpoints", None, "rl/trainer.py", "save"),
)


def cumulative_seconds(stats: pstats.Stats, file_suffix: str, function: str) -> float:
    """Cumulative seconds of every profiled function named ``function`` in a file ending ``file_suffix``."""
    return sum(row[3] for (file, _, name), row in stats.stats.items()  # type: ignore[attr-defined]
               if name == function and file.replace("\\", "/").endswith(file_suffix))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="configs/default.yaml")
    parser.add_argument("--updates", type=int, default=3)
    parser.add_argument("overrides", nargs="*", help="dotted key=value overrides of the config")
    args = parser.parse_args()
    batch_size = load_config(args.config, args.overrides).batch_size
    config = load_config(args.config, [*args.overrides, f"ppo.total_timesteps={args.updates * batch_size}",
                                       "run.image_every=0", "ppo.update_threads=1"])  # one thread, profiled
    with tempfile.TemporaryDirectory() as tmp:
        trainer = Trainer.create(config, Path(tmp) / "run")
        profiler = cProfile.Profile()
        profiler.runcall(trainer.train, progress=False)
    stats = pstats.Stats(profiler)
    total = cumulative_seconds(stats, "rl/trainer.py", "train")
    seconds = {phase: cumulative_seconds(stats, suffix, name) for phase, _, suffix, name in PHASES}
    print(f"{args.config} {' '.join(args.overrides)} ppo.update_threads=1: {args.updates} updates of {batch_size} env steps, "
          f"{total:.1f} s in all ({args.updates * batch_size / total:.0f} env steps/s under the profiler)")
    print("| phase | s per update | share of the loop |")
    print("| --- | --- | --- |")
    for phase, parent, _, _ in PHASES:
        label = phase if parent is None else f"  {phase}"
        print(f"| {label} | {seconds[phase] / args.updates:.2f} | {seconds[phase] / total:.0%} |")
    for parent in ("rollout", "PPO update"):
        rest = seconds[parent] - sum(seconds[p] for p, of, _, _ in PHASES if of == parent)
        print(f"|   rest of the {parent} | {rest / args.updates:.2f} | {rest / total:.0%} |")


if __name__ == "__main__":
    main()
