"""Train the graph-attention exploration policy with PPO.

    python train.py --config configs/default.yaml [key=value ...]   # a new run in runs/<run.name>
    python train.py --resume runs/<name>                             # continue a killed run
    python train.py --config configs/dungeon.yaml --init-from pretrained/default.pt   # a new run from trained weights

Writes into the run folder: the resolved ``config.yaml``, TensorBoard events
(``tensorboard --logdir runs``) and ``checkpoint_*.pt`` files.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from config import ConfigError, load_config
from learning.ppo import NonFiniteLossError
from learning.trainer import Trainer
from run.checkpoint import CheckpointError, latest_checkpoint
from run.lock import RunLockedError


def attention_heatmaps(weights, node_mask, title: str = ""):
    """``viz.heatmaps.attention_heatmaps``, imported at the first picture: matplotlib is 0.9 s of
    every start, and a run with ``run.image_every: 0`` draws none."""
    from viz.heatmaps import attention_heatmaps as paint

    return paint(weights, node_mask, title)


def saved_so_far(trainer: Trainer | None) -> str:
    """What an abrupt stop leaves: the newest checkpoint and how to continue, or that there is none."""
    newest = None if trainer is None else latest_checkpoint(trainer.run_dir)
    if newest is None:
        return "nothing was saved"
    return f"the newest checkpoint is {newest}; continue with: python train.py --resume {trainer.run_dir}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="configs/default.yaml", help="YAML file (default: %(default)s)")
    parser.add_argument("--resume", metavar="RUN_DIR", help="continue the run in RUN_DIR from its last checkpoint")
    parser.add_argument("--init-from", metavar="WEIGHTS",
                        help="start a new run from these weights (a run folder, a checkpoint or a pretrained "
                             "file; same model config): run.init_from")
    parser.add_argument("overrides", nargs="*", help="dotted key=value overrides, e.g. model.n_heads=2")
    args = parser.parse_intermixed_args(argv)  # overrides may come before or after --init-from
    trainer = None
    try:
        if args.resume:
            if args.overrides or args.init_from:
                parser.error("--resume continues a run with its saved config.yaml; overrides and --init-from "
                             "are not allowed")
            trainer = Trainer.resume(Path(args.resume), paint_attention=attention_heatmaps)
        else:
            init = [f"run.init_from={args.init_from}"] if args.init_from else []
            config = load_config(args.config, [*args.overrides, *init])
            trainer = Trainer.create(config, Path(config.run.run_dir or f"runs/{config.run.name}"), attention_heatmaps)
        print(f"run folder: {trainer.run_dir}  (tensorboard --logdir {trainer.run_dir.parent})")
        stopped = trainer.train()
    except (ConfigError, CheckpointError, FileExistsError, FileNotFoundError, NonFiniteLossError,
            RunLockedError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # a second Ctrl-C, or one while starting: out at once
        print(f"interrupted; {saved_so_far(trainer)}", file=sys.stderr)
        return 130
    if stopped:
        resume = "" if stopped.checkpoint is None else f"; continue with: python train.py --resume {trainer.run_dir}"
        print(stopped.describe() + resume, file=sys.stderr)
        return stopped.exit_code
    print(f"done: {trainer.update} updates, {trainer.global_step} steps; checkpoints in {trainer.run_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
