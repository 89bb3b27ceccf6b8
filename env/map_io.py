"""Loading a user's own map from an image, a ``.npy`` file or a ROS map YAML: dark (or nonzero in
.npy, or not known free in a ROS map: ``env.ros_map``) = obstacle.

Maps like the reference code's dungeon PNGs (light floor, dark walls) load as they are; pass
``downsample`` to shrink a large picture, where a block becomes an obstacle if any of its pixels
is one (so thin walls survive). An image may also mark the robot's start (:func:`load_map`).
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

from env.maps import GridMap, largest_free_component, random_cell
from env.ros_map import RosMapError, image_size, read_ros_map
from env.settings import MAX_MAP_SIDE

IMAGE_SUFFIXES = (".png", ".bmp", ".gif", ".jpg", ".jpeg", ".tif", ".tiff")
ROS_MAP_SUFFIXES = (".yaml", ".yml")
"""A ROS map_server map's YAML file (``env.ros_map``), which names its image."""
MAP_SUFFIXES = (".npy", *IMAGE_SUFFIXES, *ROS_MAP_SUFFIXES)
"""The file types a map may have."""
DARK_BELOW = 128
"""Grey level (0-255) under which an image pixel is an obstacle."""
MARKER_LUMINANCE = 208
"""The start marker's luminance, as the reference reads its PNGs (``skimage.io.imread(path,
as_gray=True) * 255`` cast to int, equal to 208): the (255, 216, 0) yellow of its maps."""
LUMINANCE_WEIGHTS = (2125, 7154, 721)
"""skimage's ``rgb2gray`` weights (0.2125 R + 0.7154 G + 0.0721 B) in ten-thousandths, so the
truncated luminance is computed exactly in integers."""


class MapError(ValueError):
    """A map file that cannot be played (missing, of another type, unreadable, of a bad size or
    content): the message names the file and what is wrong with it."""


@dataclass(frozen=True)
class LoadedMap:
    """A decoded map file."""

    occupied: np.ndarray
    """[H, W] bool, True for an obstacle (after downsampling)."""
    marker: tuple[float, float] | None
    """The centroid of the start marker in cell units (row, col; cell (i, j) spans [i, i+1) x
    [j, j+1)), or None when the map has no marker (always for ``.npy``)."""


def map_shape(path: str | Path, downsample: int = 1) -> tuple[int, int]:
    """The (H, W) in cells ``path`` loads to, read from its header only (nothing is decoded)."""
    path = Path(path)
    if path.suffix.lower() not in MAP_SUFFIXES:
        raise MapError(f"{path}: unsupported map file type {path.suffix.lower()!r}; "
                         f"allowed: {', '.join(MAP_SUFFIXES)}")
    if not path.is_file():
        raise MapError(f"map file {str(path)!r} does not exist")
    if path.suffix.lower() == ".npy":
        try:
            shape = np.load(path, mmap_mode="r", allow_pickle=False).shape
        except Exception as error:  # numpy reports a garbled file in many ways (ValueError, EOFError, TokenError, ...)
            raise MapError(f"{path}: not a readable .npy array ({error})") from None
        if len(shape) != 2:
            raise MapError(f"{path}: a .npy map must be 2-D, got shape {shape}")
    elif path.suffix.lower() in ROS_MAP_SUFFIXES:
        try:
            shape = image_size(path)
        except RosMapError as error:
            raise MapError(str(error)) from None
    else:
        try:
            with Image.open(path) as image:
                width, height = image.size
        except (OSError, SyntaxError, ValueError, Image.DecompressionBombError) as error:  # a broken PNG: SyntaxError
            raise MapError(f"{path}: not a readable image ({error})") from None
        shape = (height, width)
    cells = (shape[0] // downsample, shape[1] // downsample)
    if min(cells) < 3:
        raise MapError(f"{path}: map of shape {cells} (map_downsample={downsample}) is too small (need >= 3x3)")
    if max(cells) > MAX_MAP_SIDE:
        raise MapError(f"{path}: map of shape {cells} is larger than {MAX_MAP_SIDE} cells a side; shrink it "
                         f"with map_downsample={-(-max(shape) // MAX_MAP_SIDE)} or more")
    return cells


def load_map(path: str | Path, downsample: int = 1) -> LoadedMap:
    """Decode ``path`` (an image or a 2-D ``.npy`` array); ``MapError`` naming the file when it
    cannot be read, is too small or too large, holds values that are not a map, or has no free cell.

    The start marker of an image is read from its RGB channels (alpha ignored) as the reference
    reads its PNGs: the pixels whose luminance ``0.2125 R + 0.7154 G + 0.0721 B`` (0-255),
    truncated to an integer, is :data:`MARKER_LUMINANCE` (208), e.g. (255, 216, 0) yellow, or
    grey 208 in a greyscale image. Such pixels are light, so always free space. The marker is
    their centroid, pixel centres at +0.5, divided by ``downsample``.
    """
    path = Path(path)
    if downsample < 1:
        raise ValueError(f"downsample must be >= 1, got {downsample}")
    map_shape(path, downsample)  # a missing file, another type, a size out of bounds: refused before decoding
    marker = None
    if path.suffix.lower() == ".npy":
        occupied = occupied_from_array(path)
    elif path.suffix.lower() in ROS_MAP_SUFFIXES:
        try:
            occupied = read_ros_map(path).occupancy != 0  # unknown and occupied: walls
        except RosMapError as error:
            raise MapError(str(error)) from None
    else:
        try:
            with Image.open(path) as image:
                occupied = np.asarray(image.convert("L")) < DARK_BELOW
                rgb = np.asarray(image.convert("RGB"))
        except (OSError, SyntaxError, ValueError, Image.DecompressionBombError) as error:  # a broken PNG: SyntaxError
            raise MapError(f"{path}: not a readable image ({error})") from None
        rows, cols = np.nonzero(marker_pixels(rgb))
        if rows.size:
            marker = ((rows.mean() + 0.5) / downsample, (cols.mean() + 0.5) / downsample)
    if downsample > 1:
        height, width = (s // downsample * downsample for s in occupied.shape)
        blocks = occupied[:height, :width].reshape(height // downsample, downsample,
                                                   width // downsample, downsample)
        occupied = blocks.any(axis=(1, 3))
    if occupied.all():
        raise MapError(f"{path}: the map has no free cell (dark pixels, or nonzero .npy values, are obstacles)")
    return LoadedMap(occupied, marker)


def occupied_from_array(path: Path) -> np.ndarray:
    """[H, W] bool from the ``.npy`` file ``path``: 0 (or False) free, any other number an obstacle.
    ``MapError`` naming the file when it holds no numbers (strings, objects, ...) or NaN or
    infinite ones, which say nothing about a cell."""
    try:
        array = np.load(path, allow_pickle=False)
    except Exception as error:  # numpy reports a garbled file in many ways (ValueError, EOFError, TokenError, ...)
        raise MapError(f"{path}: not a readable .npy array ({error})") from None
    if array.dtype.kind not in "biuf":
        raise MapError(f"{path}: a .npy map holds numbers (0 free, nonzero an obstacle), got dtype {array.dtype}")
    if array.dtype.kind == "f" and not np.isfinite(array).all():
        raise MapError(f"{path}: a .npy map holds finite numbers (0 free, nonzero an obstacle); "
                       f"{int((~np.isfinite(array)).sum())} of its values are NaN or infinite")
    return array.astype(bool)


def marker_pixels(rgb: np.ndarray) -> np.ndarray:
    """[H, W] bool: the pixels of ``rgb`` ([H, W, 3] uint8) whose luminance, truncated, is
    :data:`MARKER_LUMINANCE`. Weighted in int32 (at most 255 x 10,000) channel by channel: exact,
    and faster than one int64 product over the channels."""
    red, green, blue = (rgb[..., channel].astype(np.int32) * weight
                        for channel, weight in enumerate(LUMINANCE_WEIGHTS))
    luminance = red + green + blue  # 10,000 x the luminance
    return (luminance >= MARKER_LUMINANCE * 10_000) & (luminance < (MARKER_LUMINANCE + 1) * 10_000)


def nearest_free_cell(occupied: np.ndarray, point: tuple[float, float]) -> tuple[int, int]:
    """The cell holding ``point`` (cell units) when it is free, else the free cell whose centre is
    nearest to it (the first in row-major order on a tie)."""
    row, col = math.floor(point[0]), math.floor(point[1])
    if 0 <= row < occupied.shape[0] and 0 <= col < occupied.shape[1] and not occupied[row, col]:
        return row, col
    cells = np.argwhere(~occupied)
    best = cells[np.argmin(((cells + 0.5 - np.asarray(point)) ** 2).sum(axis=1))]
    return int(best[0]), int(best[1])


_WARNED_NO_MARKER: set[str] = set()


def start_on(loaded: LoadedMap, start: str, rng: np.random.Generator, name: str) -> GridMap:
    """A :class:`GridMap` over ``loaded``, its start chosen by the ``start`` rule
    (``env.settings.START_RULES``): ``marker`` where the map has one, else a random cell of the
    largest free area (warning once per file and process when a marker was asked for).

    The grid is used as it is: free cells not connected to the start stay free and are simply
    not counted towards coverage, and the env treats everything outside the grid as wall.
    """
    occupied = loaded.occupied
    if start == "marker":
        if loaded.marker is not None:
            return GridMap(occupied, nearest_free_cell(occupied, loaded.marker))
        if name not in _WARNED_NO_MARKER:
            _WARNED_NO_MARKER.add(name)
            warnings.warn(f"{name}: start='marker' but the map has no start marker (pixels of luminance "
                          f"{MARKER_LUMINANCE}, e.g. (255, 216, 0) yellow; .npy maps have none): "
                          f"it starts at a random cell", stacklevel=2)
    return GridMap(occupied, random_cell(largest_free_component(occupied), rng))
