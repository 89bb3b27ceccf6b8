"""Checkpoints: written atomically, read back with ``torch.load(weights_only=True)``.

A checkpoint holds only tensors, numbers and lists, so loading it runs no pickled code. It has
everything an interrupted run needs to continue on the same trajectory: model, optimizer, step
counters, the torch RNG state, and each env's episode number and actions since its reset.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import torch

from rl.atomic import atomic_write

_NAME = re.compile(r"checkpoint_(\d+)\.pt$")


def checkpoint_path(run_dir: Path, update: int) -> Path:
    return run_dir / f"checkpoint_{update:06d}.pt"


def save_checkpoint(state: dict[str, Any], path: Path) -> None:
    """Write ``state`` to ``path`` atomically: a kill at any moment leaves either the previous
    checkpoint or the complete new one, never a torn file."""
    atomic_write(path, lambda f: torch.save(state, f))


def latest_checkpoint(run_dir: Path) -> Path | None:
    """The checkpoint with the highest update number in ``run_dir``, or None."""
    found = [(int(m.group(1)), p) for p in run_dir.glob("checkpoint_*.pt") if (m := _NAME.search(p.name))]
    return max(found)[1] if found else None


def load_checkpoint(path: Path, device: torch.device | str = "cpu") -> dict[str, Any]:
    """Read a checkpoint without unpickling arbitrary objects."""
    return torch.load(path, map_location=device, weights_only=True)
