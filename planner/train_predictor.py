"""Train the map predictor: the guess the planner (``planner.actor``) plans in.

    python -m planner.train_predictor --config configs/dungeon.yaml --out runs/map_predictor.pt
        [--maps 3000] [--epochs 6] [--width 16] [--depth 3] [--flip] [--learning-rate 1e-3] [KEY=VALUE ...]

docs/results.md (section 4) found that a lookahead which knows the true map a few cells past what
the robot has seen travels much less than greedy (``experiments.headroom --reveal D``). This module
asks whether a learned guess of those cells can stand in for the truth (``planner.actor`` plans in
that guess):

1. **pairs**: greedy plays the first ``--maps`` maps of the config's training part (with a
   ``map_dir``), or ``--maps`` procedural maps drawn from training seeds (even, so never an
   evaluation map: ``run.seeding``); a third of the states it passes keep their belief ([H, W]
   codes 0 / 1 / 2), each with its map's truth;
2. **fit**: ``predictor.MapPredictor`` learns, by Adam on the binary cross-entropy, which unknown
   cells within ``LOSS_REACH`` cells (a square) of a known free cell are walls; every tenth map's
   states are held out, and each epoch reports their loss and the accuracy within
   ``ACCURACY_REACH`` cells, beside the all-walls guess's; with ``--flip`` each minibatch is
   mirrored at random (rows, columns, both or neither), beliefs and truths alike.

The file written is a ``planner.predictor_files`` file (weights only), rewritten whole after every epoch;
Ctrl-C keeps the last one. ``python -m planner.files ... --planner FILE`` carries it inside an
agent's pretrained file, so that ``evaluate.py --checkpoint`` plays the planner too.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from tqdm import tqdm

from config import ConfigError, EnvConfig, load_config
from env.baselines import greedy
from env.grid_explore import GridExploreEnv
from env.sensing import FREE, UNKNOWN
from learning.envs import make_env, with_env_overrides
from planner.predictor import MapPredictor
from planner.predictor_files import predictor_file
from run.atomic import atomic_write
from run.interrupt import StopOnSignal, signal_exit_code
from run.seeding import train_episode_seed

LOSS_REACH = 12
"""Cells within this many (a square's half-side) of a known free cell count in the loss; the
ones further off are the prior's and dilute what is learned near the frontier."""
ACCURACY_REACH = 5
"""The held-out accuracy counts unknown cells this near a known free cell: where a lookahead
knowing the truth already gains most (docs/results.md, section 4)."""
KEEP = 0.3
"""The fraction of greedy's states kept as pairs: about ten a floor plan."""


@dataclass
class Pairs:
    """Beliefs [n, H, W] int8 (inside the padding), their maps' truths [m, H, W] bool, and the
    map of each belief, ``which`` [n] (an index into ``truths``)."""

    beliefs: np.ndarray
    truths: np.ndarray
    which: np.ndarray


def collect_pairs(env_config: EnvConfig, maps: int, seed: int = 0, progress: bool = True) -> Pairs:
    """Greedy on the first ``maps`` maps of ``env_config``'s collection, or on ``maps`` procedural
    maps of training seeds, keeping ``KEEP`` of the beliefs it passes through (drawn from ``seed``)."""
    env, rng = make_env(env_config), np.random.default_rng(seed)
    collection = env_config.kwargs.get("map_dir") is not None
    beliefs, truths, which = [], [], []
    for index in tqdm(range(maps), desc="pairs", unit="map", disable=not progress):
        if collection:
            obs, _ = env.reset(seed=seed + index, options={"map_index": index})
        else:
            obs, _ = env.reset(seed=train_episode_seed(seed, 0, index))
        world: GridExploreEnv = env.unwrapped
        p = world.pad
        truths.append(world.grid_map.occupied.copy())
        while True:
            if rng.random() < KEEP:
                beliefs.append(world.belief[p:-p, p:-p].copy())
                which.append(index)
            obs, _, terminated, truncated, _ = env.step(greedy(obs, env))
            if terminated or truncated:
                break
    env.close()
    return Pairs(np.stack(beliefs), np.stack(truths), np.array(which))


def _near(belief: torch.Tensor, code: int, reach: int) -> torch.Tensor:
    """[B, H, W] bool: within ``reach`` cells (a square) of a cell of ``code``."""
    hit = (belief == code).float()[:, None]
    return F.max_pool2d(hit, 2 * reach + 1, stride=1, padding=reach)[:, 0] > 0


def _scored(belief: torch.Tensor, reach: int) -> torch.Tensor:
    """The cells a guess is judged on: unknown, and within ``reach`` of a known free cell."""
    return (belief == UNKNOWN) & _near(belief, FREE, reach)


def mirrored(belief: torch.Tensor, truth: torch.Tensor, generator: torch.Generator
             ) -> tuple[torch.Tensor, torch.Tensor]:
    """A minibatch ([B, H, W] each) mirrored alike: its rows reversed with probability 1/2, its
    columns too. A floor plan mirrored is as much a floor plan."""
    dims = [dim for dim in (1, 2) if torch.rand(1, generator=generator).item() < 0.5]
    return belief.flip(dims), truth.flip(dims)


def fit(net: MapPredictor, pairs: Pairs, epochs: int, learning_rate: float, save, stop=None,
        batch: int = 64, progress: bool = True, flip: bool = False) -> list[dict[str, float]]:
    """Adam on the cross-entropy of the scored cells; ``save(net, history)`` after each epoch.
    Every tenth map's pairs are held out. With ``flip``, each minibatch is mirrored at random.
    Returns the per-epoch history."""
    beliefs, truths = torch.from_numpy(pairs.beliefs), torch.from_numpy(pairs.truths)
    which = torch.from_numpy(pairs.which)
    held = which % 10 == 0
    train_rows, held_rows = torch.nonzero(~held)[:, 0], torch.nonzero(held)[:, 0]
    if not len(train_rows) or not len(held_rows):
        raise ValueError(f"{len(pairs.truths)} maps give {len(train_rows)} training and {len(held_rows)} held-out "
                         f"pairs; collect from more maps")
    optimizer = torch.optim.Adam(net.parameters(), lr=learning_rate)
    generator, history = torch.Generator().manual_seed(0), []
    for epoch in range(epochs):
        net.train()
        order = train_rows[torch.randperm(len(train_rows), generator=generator)]
        losses = []
        for start in tqdm(range(0, len(order), batch), desc=f"epoch {epoch}", disable=not progress, leave=False):
            rows = order[start : start + batch]
            belief, truth = beliefs[rows], truths[which[rows]]
            if flip:
                belief, truth = mirrored(belief, truth, generator)
            scored = _scored(belief, LOSS_REACH)
            loss = F.binary_cross_entropy_with_logits(net(belief)[scored], truth[scored].float())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            if stop is not None and stop.requested:
                return history  # the epoch is unfinished: the file keeps the last whole one
        history.append({"epoch": epoch, "train_loss": float(np.mean(losses)), **judge(net, beliefs[held_rows],
                                                                                      truths[which[held_rows]])})
        save(net, history)
        if progress:
            print(" ".join(f"{key} {value:.4f}" if isinstance(value, float) else f"{key} {value}"
                           for key, value in history[-1].items()), flush=True)
    return history


@torch.no_grad()
def judge(net: MapPredictor, beliefs: torch.Tensor, truths: torch.Tensor, batch: int = 256) -> dict[str, float]:
    """Held-out loss (scored cells), and the accuracy near the known free cells, the
    predictor's and the all-walls guess's."""
    net.eval()
    loss = right = walls = near = scored_cells = 0.0
    for start in range(0, len(beliefs), batch):
        belief, truth = beliefs[start : start + batch], truths[start : start + batch]
        logits = net(belief)
        scored = _scored(belief, LOSS_REACH)
        loss += F.binary_cross_entropy_with_logits(logits[scored], truth[scored].float(), reduction="sum").item()
        scored_cells += scored.sum().item()
        close = _scored(belief, ACCURACY_REACH)
        right += ((logits[close] > 0) == truth[close]).sum().item()
        walls += truth[close].sum().item()
        near += close.sum().item()
    return {"held_out_loss": loss / scored_cells, "held_out_accuracy": right / near,
            "all_walls_accuracy": walls / near}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="configs/dungeon.yaml", help="YAML file (default: %(default)s)")
    parser.add_argument("--out", type=Path, required=True, help="the predictor file to write")
    parser.add_argument("--maps", type=int, default=3000, help="training maps greedy plays for pairs")
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--width", type=int, default=16, help="channels of the U-Net's first level")
    parser.add_argument("--depth", type=int, default=3, help="levels of the U-Net (at least 2)")
    parser.add_argument("--flip", action="store_true", help="mirror each minibatch at random")
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("overrides", nargs="*", help="dotted key=value overrides, e.g. env.kwargs.map_dir=PATH")
    args = parser.parse_intermixed_args(argv)
    for name, low in (("maps", 1), ("epochs", 1), ("width", 1), ("depth", 2)):
        if getattr(args, name) < low:
            parser.error(f"--{name} must be at least {low}, got {getattr(args, name)}")
    if not args.learning_rate > 0:
        parser.error(f"--learning-rate must be > 0, got {args.learning_rate}")
    try:
        config = load_config(args.config, args.overrides)
        map_dir = config.env.kwargs.get("map_dir")
        env_config = config.env if map_dir is None else with_env_overrides(config.env, ["map_split=train"])
        if args.out.exists():
            raise FileExistsError(f"{args.out} exists: choose another --out")
        torch.manual_seed(args.seed)
        net = MapPredictor(args.width, args.depth)
        with StopOnSignal("stopping; the file keeps the last finished epoch") as stop:
            pairs = collect_pairs(env_config, args.maps, args.seed)
            trained = {"maps": args.maps, "pairs": len(pairs.beliefs), "flip": args.flip,
                       **({} if map_dir is None else {"map_dir": str(map_dir)})}

            def save(model: MapPredictor, history: list) -> None:
                atomic_write(args.out, lambda f: torch.save(predictor_file(model, {**trained, "history": history}), f))

            history = fit(net, pairs, args.epochs, args.learning_rate, save, stop, flip=args.flip)
    except (ConfigError, FileExistsError, FileNotFoundError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if stop.requested:
        print(f"stopped by {stop.requested}; {args.out}: {len(history)} epoch(s)", file=sys.stderr)
        return signal_exit_code(stop.requested)
    print(f"done: {args.out} ({len(history)} epochs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
