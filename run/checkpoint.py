"""Checkpoints: written atomically, read back with ``torch.load(weights_only=True)``.

A checkpoint holds only tensors, numbers, strings and lists, so loading it runs no pickled code.
It has everything an interrupted run needs to continue on the same trajectory: model, optimizer,
step counters, the torch RNG state, and each env's episode number and actions since its reset; and
the model config it was trained with, which loading checks against the run's ``config.yaml``.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import torch

from run.atomic import atomic_write

_NAME = re.compile(r"checkpoint_(\d+)\.pt$")


def checkpoint_path(run_dir: Path, update: int) -> Path:
    return run_dir / f"checkpoint_{update:06d}.pt"


def save_checkpoint(state: dict[str, Any], path: Path) -> None:
    """Write ``state`` to ``path`` atomically: a kill at any moment leaves either the previous
    checkpoint or the complete new one, never a torn file."""
    atomic_write(path, lambda f: torch.save(state, f))


def checkpoint_update(path: Path) -> int:
    """The update a checkpoint was written after, from its name (``checkpoint_000045.pt``: 45)."""
    match = _NAME.search(Path(path).name)
    if match is None:
        raise ValueError(f"{path} is not named like a checkpoint (checkpoint_NNNNNN.pt)")
    return int(match.group(1))


def checkpoints(run_dir: Path) -> list[Path]:
    """The checkpoints in ``run_dir``, newest (highest update number) first."""
    found = [(int(m.group(1)), p) for p in Path(run_dir).glob("checkpoint_*.pt") if (m := _NAME.search(p.name))]
    return [p for _, p in sorted(found, reverse=True)]


def latest_checkpoint(run_dir: Path) -> Path | None:
    """The checkpoint with the highest update number in ``run_dir``, or None."""
    found = checkpoints(run_dir)
    return found[0] if found else None


class CheckpointError(ValueError):
    """A checkpoint that cannot be read, or that does not fit the network it is loaded into."""


def load_checkpoint(path: Path, device: torch.device | str = "cpu") -> dict[str, Any]:
    """Read a checkpoint without unpickling arbitrary objects (``weights_only=True``).

    A file that is empty, truncated, garbage or holds pickled objects is a ``CheckpointError``
    naming it. torch's own message is not passed on: it suggests ``weights_only=False``, which
    would run whatever code a tampered file holds.
    """
    try:
        state = torch.load(path, map_location=device, weights_only=True)
    except Exception as error:  # torch raises EOFError, RuntimeError, UnpicklingError, ... by cause
        raise CheckpointError(f"{path} is not a readable checkpoint ({type(error).__name__}: truncated, "
                              f"empty, overwritten or not written by train.py)") from None
    if not isinstance(state, dict) or "model" not in state:
        raise CheckpointError(f"{path} is not a checkpoint of train.py (no model weights in it)")
    return state


def load_latest_readable(run_dir: Path) -> tuple[Path, dict[str, Any], list[str]]:
    """The newest checkpoint of ``run_dir`` that loads: (path, state, one line per newer one that
    did not, saying why). ``CheckpointError`` when none loads, naming each; ``FileNotFoundError``
    when there is none."""
    found = checkpoints(run_dir)
    if not found:
        raise FileNotFoundError(f"no checkpoint_*.pt in {run_dir}: nothing to resume")
    skipped = []
    for path in found:
        try:
            return path, load_checkpoint(path), skipped
        except CheckpointError as error:
            skipped.append(str(error))
    raise CheckpointError(f"no checkpoint in {run_dir} loads: " + "; ".join(skipped))


SAME_FUNCTION_KEYS = frozenset({"attention_impl"})
"""Model settings that choose how the network computes, not what: weights trained with one value
load under any other (``ATTENTION_IMPLS`` all give the same outputs and gradients)."""


def load_model_weights(policy: torch.nn.Module, state: dict[str, Any], path: Path, model_config: dict,
                       wanted: str = "config.yaml") -> None:
    """Load ``state["model"]`` into ``policy``, whose config is ``model_config`` (from ``wanted``).

    The checkpoint records the model config it was trained with; a ``config.yaml`` edited since
    (``n_heads`` changed, say) is a ``CheckpointError`` naming the keys that differ, and weights of
    other shapes are one naming the tensors and both shapes. Keys of ``SAME_FUNCTION_KEYS`` may differ.
    """
    recorded = state.get("model_config")  # None: a checkpoint of an older version did not record it
    if recorded is not None:
        differ = sorted(k for k in recorded.keys() | model_config.keys()
                        if k not in SAME_FUNCTION_KEYS and recorded.get(k) != model_config.get(k))
        if differ:
            described = ", ".join(f"{k}: {recorded.get(k)!r} in the checkpoint, {model_config.get(k)!r} in {wanted}"
                                  for k in differ)
            raise CheckpointError(f"{path} was trained with another model config than "
                                  f"{'its ' * (wanted == 'config.yaml')}{wanted} says ({described})")
    own = policy.state_dict()
    mismatched = [f"{key}: {list(value.shape)} in the checkpoint, {list(own[key].shape)} in the model"
                  for key, value in state["model"].items() if key in own and value.shape != own[key].shape]
    missing, unexpected = sorted(own.keys() - state["model"].keys()), sorted(state["model"].keys() - own.keys())
    if mismatched or missing or unexpected:
        parts = mismatched + [f"missing {missing}"] * bool(missing) + [f"unexpected {unexpected}"] * bool(unexpected)
        raise CheckpointError(f"{path} does not fit this network: " + "; ".join(parts))
    policy.load_state_dict(state["model"])
