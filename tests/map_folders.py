"""Small map files written by the tests that need a map folder (tests make their own maps)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

MAP_SHAPES = {"1.png": (16, 16), "2.png": (12, 20), "10.png": (18, 14), "3.npy": (14, 14)}
"""A small map collection: names and shapes; the largest height is 18, the largest width 20."""
MAP_ORDER = ["1.png", "2.png", "3.npy", "10.png"]
"""``MAP_SHAPES``' names in natural order."""


def room_map(height: int, width: int) -> np.ndarray:
    """[H, W] bool obstacles: a walled room with a pillar in the middle."""
    occupied = np.zeros((height, width), dtype=bool)
    occupied[[0, -1], :] = occupied[:, [0, -1]] = True
    occupied[height // 2, width // 2] = True
    return occupied


def write_maps(folder: Path, shapes: dict[str, tuple[int, int]] = MAP_SHAPES) -> Path:
    """``folder`` holding a ``room_map`` per name (PNG: black walls on white; .npy: 1 = wall)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, shape in shapes.items():
        occupied = room_map(*shape)
        if name.endswith(".npy"):
            np.save(folder / name, occupied)
        else:
            Image.fromarray(np.where(occupied, 0, 255).astype(np.uint8)).save(folder / name)
    return folder
