"""The map predictor's file: ``{"format", "model", "width", "depth", "trained"}``, tensors, numbers and
strings only, so ``torch.load(weights_only=True)`` reads it and no pickled code runs.

``python -m planner.train_predictor`` writes one; ``python -m planner.files ... --planner FILE`` carries
one inside an agent's pretrained file.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from planner.predictor import MapPredictor

FORMAT = "graph-attention-exploration/map-predictor-v1"
"""The ``format`` entry of a map predictor file."""


def predictor_file(net: MapPredictor, trained: dict[str, Any]) -> dict[str, Any]:
    """A predictor file's content: ``net``'s weights, its width and depth, and ``trained``, where
    it came from."""
    return {"format": FORMAT, "model": net.state_dict(), "width": net.width, "depth": net.depth, "trained": trained}


def predictor_from_state(state: Any, where: str) -> MapPredictor:
    """The predictor (in eval mode) whose file content is ``state``; ``ValueError`` naming
    ``where`` when it is not one."""
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        raise ValueError(f"{where} is not a map predictor file (format {FORMAT!r})")
    width, depth = state["width"], state.get("depth", 3)  # files written before depth was a choice: 3
    net = MapPredictor(width, depth)
    try:
        net.load_state_dict(state["model"])
    except RuntimeError as error:  # a file whose weights do not fit its shape
        raise ValueError(f"{where}: the weights do not fit a map predictor of width {width} and depth {depth}: "
                         f"{error}") from None
    return net.eval()


def _load(path: Path) -> Any:
    """What ``torch.load(weights_only=True)`` reads at ``path``: ``FileNotFoundError`` when there
    is no file, ``ValueError`` when it does not load."""
    if not Path(path).is_file():
        raise FileNotFoundError(f"no map predictor file at {path}")
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # not a torch file, or one holding more than tensors
        raise ValueError(f"{path} does not load as a map predictor file: {error}") from None


def read_predictor_file(path: Path) -> dict[str, Any]:
    """The content of the predictor file at ``path``, checked: ``FileNotFoundError`` when there
    is none, ``ValueError`` when it is not a map predictor file."""
    state = _load(path)
    predictor_from_state(state, str(path))
    return state


def load_predictor(path: Path) -> MapPredictor:
    """The predictor the file at ``path`` holds (``read_predictor_file``'s errors)."""
    return predictor_from_state(_load(path), str(path))
