"""Loading a user's own map from an image or a ``.npy`` file: dark (or nonzero in .npy) = obstacle.

Maps like the reference code's dungeon PNGs (white floor, black walls) load as they are; pass
``downsample`` to shrink a large picture, where a block becomes an obstacle if any of its pixels
is one (so thin walls survive).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

from env.config import MAX_MAP_SIDE
from env.maps import GridMap, largest_free_component, random_cell

IMAGE_SUFFIXES = (".png", ".bmp", ".gif", ".jpg", ".jpeg", ".tif", ".tiff")
DARK_BELOW = 128
"""Grey level (0-255) under which an image pixel is an obstacle."""


def load_occupancy(path: str | Path, downsample: int = 1) -> np.ndarray:
    """[H, W] bool obstacle map from ``path`` (an image or a 2-D ``.npy`` array)."""
    path = Path(path)
    if downsample < 1:
        raise ValueError(f"downsample must be >= 1, got {downsample}")
    if not path.is_file():
        raise ValueError(f"map file {str(path)!r} does not exist")
    suffix = path.suffix.lower()
    if suffix == ".npy":
        try:
            array = np.load(path, allow_pickle=False)
        except (ValueError, OSError) as error:
            raise ValueError(f"{path}: not a readable .npy array ({error})") from None
        if array.ndim != 2:
            raise ValueError(f"{path}: a .npy map must be 2-D, got shape {array.shape}")
        occupied = array.astype(bool)
    elif suffix in IMAGE_SUFFIXES:
        try:
            with Image.open(path) as image:
                occupied = np.asarray(image.convert("L")) < DARK_BELOW
        except (OSError, Image.DecompressionBombError) as error:  # UnidentifiedImageError is an OSError
            raise ValueError(f"{path}: not a readable image ({error})") from None
    else:
        raise ValueError(f"{path}: unsupported map file type {suffix!r}; "
                         f"allowed: .npy, {', '.join(IMAGE_SUFFIXES)}")
    if downsample > 1:
        height, width = (s // downsample * downsample for s in occupied.shape)
        blocks = occupied[:height, :width].reshape(height // downsample, downsample,
                                                   width // downsample, downsample)
        occupied = blocks.any(axis=(1, 3))
    if min(occupied.shape) < 3:
        raise ValueError(f"{path}: map of shape {occupied.shape} is too small (need >= 3x3)")
    if max(occupied.shape) > MAX_MAP_SIDE:
        raise ValueError(f"{path}: map of shape {occupied.shape} is larger than {MAX_MAP_SIDE} cells a side; "
                         f"shrink it with map_downsample={-(-max(occupied.shape) // MAX_MAP_SIDE)} or more")
    if occupied.all():
        raise ValueError(f"{path}: the map has no free cell (dark pixels, or nonzero .npy values, are obstacles)")
    return occupied


def map_from_occupancy(occupied: np.ndarray, rng: np.random.Generator) -> GridMap:
    """A :class:`GridMap` over a loaded grid, starting at a random cell of its largest free area.

    The grid is used as it is: free cells not connected to the start stay free and are simply
    not counted towards coverage, and the env treats everything outside the grid as wall.
    """
    return GridMap(occupied, random_cell(largest_free_component(occupied), rng))
