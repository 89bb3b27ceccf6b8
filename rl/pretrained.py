"""Trained weights from any of three sources, and the small files that ship them.

    python -m rl.pretrained RUN_OR_CHECKPOINT OUT.pt [--env KEY=VALUE ...]   # write a pretrained file
        [--planner PREDICTOR] [--prior-weight W] [--opening 4]

A source of weights is a run folder (its newest checkpoint), one ``checkpoint_*.pt`` (its run's
``config.yaml`` beside it), or a pretrained file: ``{"format", "model", "config", "trained"}``,
the network's weights, the resolved config they were trained with, and where they came from.
It holds tensors, numbers and strings only, so ``torch.load(weights_only=True)`` reads it and no
pickled code runs; it has no optimizer or RNG state, so it cannot be resumed, only evaluated,
visualised, or trained further (``train.py --init-from``). ``--env`` changes the recorded env,
e.g. ``map_dir=DungeonMaps/train`` in place of the folder on the machine that trained it.

``--planner PREDICTOR`` adds a ``"planner"`` entry, ``{"predictor", "prior_weight"[, "opening"]}``:
a map predictor file (``predictor.files``), the weight the planner gives the agent's
log-probability (``rl.planner.planning_actor``) and, with ``--opening W``, the side of the
squares of free cells its guess is opened by (``rl.planner.predicted_guess``; a file
without it, or with ``--opening 0``, plays the guess unopened). ``evaluate.py --checkpoint`` then
plays ``planner`` beside the agent. Rewriting a pretrained file keeps its planner unless
``--planner`` replaces it; ``--prior-weight`` or ``--opening`` alone change the planner it carries,
its predictor as it was (``--opening 0`` takes its opening away), as the same options of
``evaluate.py`` change it for one evaluation.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any, NamedTuple

import torch

from config import Config, ConfigError, apply_override, load_run_config, saved_config
from env.config import GridExploreConfig
from predictor import MapPredictor
from predictor.files import load_predictor, predictor_from_state, read_predictor_file
from rl.atomic import atomic_write
from rl.checkpoint import CheckpointError, checkpoints, load_checkpoint

FORMAT = "graph-attention-exploration/pretrained-v1"
"""The ``format`` entry of a pretrained file."""
PLANNER = "planner"
"""The optional entry carrying a map predictor and its planner's prior weight."""
DEFAULT_PRIOR_WEIGHT = 0.5
"""The planner's weight on the agent's log-probability in an unopened guess, chosen on the first
100 validation floor plans (docs/results.md, section 8, v8); in a guess opened by 4 x 4 squares,
0.25 (v17: ``pretrained/dungeon.pt``)."""


class Planner(NamedTuple):
    """What ``evaluate.py``'s ``planner`` plays with (``rl.planner.planner_actor``)."""

    predictor: MapPredictor
    prior_weight: float
    """The weight on the agent's log-probability."""
    opening: int | None = None
    """The side of the squares of free cells the guess is opened by; None: not opened."""

    def overridden(self, prior_weight: float | None = None, opening: int | None = None) -> Planner:
        """This planner with ``prior_weight`` and ``opening`` replaced where not None, as a command
        line asks (``overridden_settings``: ``opening`` 0 means not opened)."""
        settings = overridden_settings(self.prior_weight, self.opening, prior_weight, opening)
        return self._replace(prior_weight=settings["prior_weight"], opening=settings.get("opening"))


def overridden_settings(prior_weight: float, opening: int | None, new_prior_weight: float | None = None,
                        new_opening: int | None = None) -> dict[str, Any]:
    """``planner_settings`` of a planner weighing ``prior_weight`` and opened by ``opening``, with
    what a command line gives in place of each where not None: ``new_opening`` 0 means not
    opened. ``ValueError`` naming a bad value."""
    if new_opening is not None:
        opening = new_opening or None
    return planner_settings(prior_weight if new_prior_weight is None else new_prior_weight, opening)


def read_weights(source: Path) -> tuple[Path, dict[str, Any], Config]:
    """(the file read, its state, the config its weights were trained with) for a run folder, a
    checkpoint or a pretrained file. ``FileNotFoundError`` when there is nothing there; a
    ``CheckpointError`` naming the file (and the readable checkpoints beside it) when it does
    not load."""
    source = Path(source)
    found = checkpoints(source) if source.is_dir() else [source] if source.is_file() else []
    if not found:
        raise FileNotFoundError(f"no weights at {source} (expected a run folder, a checkpoint_*.pt file "
                                f"or a pretrained file such as pretrained/default.pt)")
    path = found[0]
    try:
        state = load_checkpoint(path)
    except CheckpointError as error:  # read exactly what was asked for, or say what else there is
        readable = [p.name for p in found[1:] if _loads(p)]
        raise CheckpointError(f"{error}; readable checkpoints beside it: {', '.join(readable) or 'none'}") from None
    if state.get("format") == FORMAT:
        return path, state, saved_config(state["config"], path)
    return path, state, load_run_config(path.parent / "config.yaml")


def _loads(path: Path) -> bool:
    try:
        load_checkpoint(path)
        return True
    except CheckpointError:
        return False


def weights_file(model: dict[str, torch.Tensor], config: Config, trained: dict[str, Any],
                 planner: dict[str, Any] | None = None) -> dict[str, Any]:
    """A pretrained file's content: ``model``'s tensors (fp32 copies), the resolved ``config``,
    ``trained``, where the weights came from, and ``planner`` when given (``planner_entry``)."""
    content = {"format": FORMAT, "model": {key: value.detach().clone().float() for key, value in model.items()},
               "config": asdict(config), "trained": trained}
    return content if planner is None else {**content, PLANNER: planner}


def planner_entry(predictor: Path, prior_weight: float = DEFAULT_PRIOR_WEIGHT, opening: int | None = None
                  ) -> dict[str, Any]:
    """The ``"planner"`` entry for the map predictor file at ``predictor`` (``opening`` 0 or None:
    not opened), checked (``FileNotFoundError``, ``ValueError``) before anything is written."""
    settings = overridden_settings(prior_weight, None, new_opening=opening)  # checked before the file is read
    return {"predictor": read_predictor_file(predictor), **settings}


def retuned_planner(source: Path, prior_weight: float | None = None, opening: int | None = None) -> dict[str, Any]:
    """The ``"planner"`` entry the pretrained file at ``source`` carries, its prior weight or
    opening replaced where given (``overridden_settings``: ``opening`` 0 takes the opening away);
    ``ValueError`` when ``source`` carries no planner or a value is bad."""
    path, state, _ = read_weights(source)
    entry = carried_planner(state)
    if entry is None:
        raise ValueError(f"{path} carries no planner to change: name its map predictor with --planner")
    return {"predictor": entry["predictor"],
            **overridden_settings(entry["prior_weight"], entry.get("opening"), prior_weight, opening)}


def planner_settings(prior_weight: float, opening: int | None) -> dict[str, Any]:
    """A planner entry's ``prior_weight`` and, unless None, ``opening``; ``ValueError`` naming a bad one."""
    if not prior_weight >= 0:
        raise ValueError(f"prior weight {prior_weight}: a weight must be 0 or more")
    if opening is not None and opening < 1:
        raise ValueError(f"opening {opening}: the side of a square of free cells, 1 or more (0: not opened)")
    return {"prior_weight": float(prior_weight)} | ({} if opening is None else {"opening": int(opening)})


def carried_planner(state: dict[str, Any]) -> dict[str, Any] | None:
    """The ``"planner"`` entry of a loaded file's ``state``: None for a checkpoint or a pretrained
    file written without one."""
    return state.get(PLANNER) if state.get("format") == FORMAT else None


def read_planner(source: Path) -> Planner | None:
    """The planner the weights at ``source`` carry, or None (a run folder, a checkpoint, or a
    pretrained file written without ``--planner``)."""
    path, state, _ = read_weights(source)
    entry = carried_planner(state)
    if entry is None:
        return None
    return Planner(predictor_from_state(entry["predictor"], f"{path}'s planner"), float(entry["prior_weight"]),
                   entry.get("opening"))


def planner_for(source: Path | None, predictor: Path | None = None) -> Planner | None:
    """The planner to play with the weights at ``source``: the map predictor file ``predictor`` at
    ``DEFAULT_PRIOR_WEIGHT``, its guess not opened, when one is named (``source`` is then not
    read), else what ``source`` carries (``read_planner``)."""
    if predictor is not None:
        return Planner(load_predictor(predictor), DEFAULT_PRIOR_WEIGHT)
    return read_planner(source)


def pretrained_state(source: Path, env_overrides: tuple[str, ...] = (), planner: dict[str, Any] | None = None
                     ) -> dict[str, Any]:
    """The pretrained file's content for the weights at ``source``, its env changed by
    ``env_overrides`` (``KEY=VALUE``, not checked against this machine's files), carrying
    ``planner`` (``planner_entry``) or else the planner ``source`` already carries."""
    path, state, config = read_weights(source)
    kwargs = dict(config.env.kwargs)
    for override in env_overrides:
        apply_override(kwargs, override)
    GridExploreConfig.from_kwargs(**kwargs)  # a key or value the env refuses: ValueError, before writing
    config = replace(config, env=replace(config.env, kwargs=kwargs))
    pretrained = state.get("format") == FORMAT
    trained = state["trained"] if pretrained else {  # a checkpoint: where it stands
        "from": path.name, "update": int(state["update"]), "global_step": int(state["global_step"])}
    return weights_file(state["model"], config, trained, planner if planner is not None else carried_planner(state))


def export(source: Path, out: Path, env_overrides: tuple[str, ...] = (), planner: dict[str, Any] | None = None
           ) -> int:
    """Write the pretrained file of ``source`` to ``out`` atomically; returns its size in bytes."""
    state = pretrained_state(source, env_overrides, planner)
    atomic_write(out, lambda f: torch.save(state, f))
    return out.stat().st_size


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write a pretrained file: weights and config only.")
    parser.add_argument("source", type=Path, help="a run folder, a checkpoint_*.pt or a pretrained file")
    parser.add_argument("out", type=Path, help="the file to write, e.g. pretrained/default.pt")
    parser.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                        help="change the recorded env setting, e.g. map_dir=DungeonMaps/train (repeatable)")
    parser.add_argument("--planner", type=Path, metavar="PREDICTOR",
                        help="carry this map predictor (python -m rl.map_prediction's file) for evaluate.py's planner")
    parser.add_argument("--prior-weight", type=float, help=f"the planner's weight on the agent's log-probability "
                                                           f"(default: {DEFAULT_PRIOR_WEIGHT} with --planner; "
                                                           f"without it, the carried planner's)")
    parser.add_argument("--opening", type=int, metavar="W", help="open the planner's guess by squares of W x W free "
                                                                "cells, 0 not at all (4 for configs/dungeon.yaml; "
                                                                "default: none with --planner; without it, the "
                                                                "carried planner's)")
    args = parser.parse_args(argv)
    try:
        if args.planner is not None:
            planner = planner_entry(args.planner, DEFAULT_PRIOR_WEIGHT if args.prior_weight is None
                                    else args.prior_weight, args.opening)
        elif args.prior_weight is not None or args.opening is not None:
            planner = retuned_planner(args.source, args.prior_weight, args.opening)
        else:
            planner = None
        size = export(args.source, args.out, tuple(args.env), planner)
    except (FileNotFoundError, CheckpointError, ConfigError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"wrote {args.out} ({size / 1e6:.2f} MB)" + ("" if planner is None else ", with its planner"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
