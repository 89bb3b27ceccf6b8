"""Trained weights from any of three sources, and the small files that ship them.

    python -m run.pretrained RUN_OR_CHECKPOINT OUT.pt [--env KEY=VALUE ...]   # write a pretrained file

A source of weights is a run folder (its newest checkpoint), one ``checkpoint_*.pt`` (its run's
``config.yaml`` beside it), or a pretrained file: ``{"format", "model", "config", "trained"}``,
the network's weights, the resolved config they were trained with, and where they came from.
It holds tensors, numbers and strings only, so ``torch.load(weights_only=True)`` reads it and no
pickled code runs; it has no optimizer or RNG state, so it cannot be resumed, only evaluated,
visualised, or trained further (``train.py --init-from``). ``--env`` changes the recorded env,
e.g. ``map_dir=DungeonMaps/train`` in place of the folder on the machine that trained it.

A pretrained file may also carry a ``"planner"`` entry (``PLANNER_ENTRY``): the planner layer's
map predictor and settings (``planner/files.py``, whose ``python -m planner.files`` adds or
changes it). To this module the entry is opaque: rewriting a file keeps it as it was.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import torch
from torch import nn

from config import Config, ConfigError, apply_override, load_run_config, saved_config
from env.observation import env_feature_names
from env.settings import GridExploreConfig
from run.atomic import atomic_write
from run.checkpoint import CheckpointError, checkpoints, load_checkpoint, load_model_weights

FORMAT = "graph-attention-exploration/pretrained-v1"
"""The ``format`` entry of a pretrained file."""
PLANNER_ENTRY = "planner"
"""The optional entry carrying the planner layer's map predictor and settings (``planner/files.py``)."""


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
    return content if planner is None else {**content, PLANNER_ENTRY: planner}


def carried_planner(state: dict[str, Any]) -> dict[str, Any] | None:
    """The ``"planner"`` entry of a loaded file's ``state``: None for a checkpoint or a pretrained
    file written without one."""
    return state.get(PLANNER_ENTRY) if state.get("format") == FORMAT else None


def load_initial_weights(policy: nn.Module, config: Config) -> None:
    """Load the weights ``run.init_from`` names into ``policy``; a ``CheckpointError`` naming the
    model settings that differ between those weights and ``config``.

    Weights trained with fewer node features (without ``context_features`` or
    ``privileged_features``) start a run with them: the embedding's columns for the new features
    start at zero, so the network plays exactly as the one it came from
    until training gives them weight.
    """
    path, state, trained_with = read_weights(Path(config.run.init_from))
    weights = with_input_columns(state["model"], env_feature_names(trained_with.env.kwargs),
                                 env_feature_names(config.env.kwargs))
    load_model_weights(policy, {**state, "model": weights, "model_config": asdict(trained_with.model)}, path,
                       asdict(config.model), wanted="this run's config")


def with_input_columns(weights: dict[str, torch.Tensor], had: tuple[str, ...],
                       wanted: tuple[str, ...]) -> dict[str, torch.Tensor]:
    """``weights`` whose node embeddings (``*.initial_embedding.weight`` [D, len(had)]) take the node
    features ``wanted``: each column moved to its feature's place, a new feature's column zero;
    unchanged unless ``wanted`` holds every feature of ``had`` and more."""
    if not set(had) < set(wanted):
        return weights
    places = torch.tensor([wanted.index(name) for name in had])
    return {key: value.new_zeros(value.shape[0], len(wanted)).index_copy(1, places, value)
            if key.endswith("initial_embedding.weight") else value for key, value in weights.items()}


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


def export_parser(description: str) -> argparse.ArgumentParser:
    """The command line of a program that writes a pretrained file: its source, where to write it,
    and changes to the recorded env (``planner.files`` adds its planner's options)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("source", type=Path, help="a run folder, a checkpoint_*.pt or a pretrained file")
    parser.add_argument("out", type=Path, help="the file to write, e.g. pretrained/default.pt")
    parser.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                        help="change the recorded env setting, e.g. map_dir=DungeonMaps/train (repeatable)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = export_parser("Write a pretrained file: weights and config only.").parse_args(argv)
    try:
        size = export(args.source, args.out, tuple(args.env))
    except (FileNotFoundError, CheckpointError, ConfigError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"wrote {args.out} ({size / 1e6:.2f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
