"""The maps an env plays from files: one ``map_file``, or a ``map_dir`` collection, one map an episode.

Building a collection reads only the files' headers (their sizes), so that every vector-env
worker builds its env cheaply; an episode decodes its map, and a small per-process cache keeps
the latest ones. ``MapCollection.check_each`` checks every file's integrity without decoding its
pixels (a PNG's chunk checksums), once per process: the check the CLIs run before any episode
(``learning.envs.check_env_config``), well under a second for the reference's 5,663 maps. What only the
pixels tell (a map without a free cell) is found, named, when the map is first played.

``map_split`` takes a fixed part of a collection: ``validation`` is every map whose name's CRC-32
is a multiple of :data:`VALIDATION_EVERY` (about one map in ten, whatever else the folder holds),
``train`` the rest, ``all`` both. Training on ``train`` and choosing on ``validation`` keeps
every choice away from the maps it is judged on.
"""
from __future__ import annotations

import functools
import glob
import numbers
import re
import zlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from PIL import Image

from env.map_io import (
    MAP_SUFFIXES,
    ROS_MAP_SUFFIXES,
    LoadedMap,
    MapError,
    load_map,
    map_shape,
)
from env.ros_map import named_image
from env.settings import GridExploreConfig

VALIDATION_EVERY = 10
"""A map is in the ``validation`` split when ``zlib.crc32(name) % VALIDATION_EVERY == 0``."""

CACHED_MAPS = 32
"""Decoded maps each process keeps (a 640 x 480 map takes 0.3 MB)."""
GLOB_CHARS = "*?["
_CHECKED: set[tuple[tuple[str, ...], int]] = set()
"""Collections (paths, downsample) this process has decoded whole."""


def natural_key(name: str) -> tuple[list, str]:
    """Sort key ordering runs of digits by their value: ``2.png`` before ``10.png``."""
    parts = re.split(r"(\d+)", name)  # text, number, text, ...: like compares with like
    return [int(part) if i % 2 else part for i, part in enumerate(parts)], name


class MapCollection:
    """Map files in a fixed order, all padded to the largest height and width among them.

    A map smaller than ``shape`` gets obstacle cells at its bottom and right, so observations of
    every map have one shape and a map's cells keep their coordinates.
    """

    def __init__(self, paths: list[Path], names: list[str], downsample: int, skipped: tuple[str, ...] = ()):
        self.paths, self.names, self.downsample = paths, names, downsample
        self.skipped = skipped
        """Names of the files beside the maps that are not maps (a LICENSE, a README), left out."""
        shapes = [map_shape(path, downsample) for path in paths]  # headers only
        self.shape = (max(h for h, _ in shapes), max(w for _, w in shapes))

    def __deepcopy__(self, memo: dict) -> MapCollection:
        return self  # never changed after construction: an env's copies share it (lookahead copies are many)

    def __len__(self) -> int:
        return len(self.paths)

    def pick(self, rng: np.random.Generator, map_index: object = None) -> int:
        """Map ``map_index`` when given, else one drawn with ``rng`` (a single map draws nothing)."""
        if map_index is None:
            return int(rng.integers(len(self))) if len(self) > 1 else 0
        if not isinstance(map_index, numbers.Integral) or isinstance(map_index, bool) \
                or not 0 <= map_index < len(self):
            raise ValueError(f"map_index={map_index!r} must be an int in [0, {len(self)}): "
                             f"the collection holds {len(self)} map(s)")
        return int(map_index)

    def load(self, index: int) -> LoadedMap:
        """Map ``index``, padded to ``shape`` (cached; its array is read-only)."""
        path = self.paths[index]
        return _padded(str(path), path.stat().st_mtime_ns, self.downsample, self.shape)

    @property
    def checked(self) -> bool:
        """Whether this process has checked every map of the collection (``check_each``)."""
        return self._key in _CHECKED

    def check_each(self) -> Iterator[str]:
        """Check every map's file whole, yielding each one's name: a ``ValueError`` naming the file
        if it is truncated or corrupt (its size was checked at construction); then ``checked`` is
        True. A PNG's chunks are read and their checksums compared, its pixels left undecoded
        (about 0.03 ms a map against 5 ms to decode one); other images are decoded."""
        for path, name in zip(self.paths, self.names):
            _check_file(path)
            yield name
        _CHECKED.add(self._key)

    @property
    def _key(self) -> tuple[tuple[str, ...], int]:
        return tuple(str(path) for path in self.paths), self.downsample


def _check_file(path: Path) -> None:
    """Raise ``ValueError`` naming ``path`` if its data is damaged (``.npy``: header read already)."""
    if path.suffix.lower() == ".npy":
        return
    if path.suffix.lower() in ROS_MAP_SUFFIXES:
        load_map(path)  # the YAML and its image, decoded: MapError naming what is wrong
        return
    try:
        with Image.open(path) as image:
            if image.format == "PNG":
                image.verify()  # every chunk read, its CRC compared; no pixel decoded
            else:
                image.load()
    except (OSError, SyntaxError, Image.DecompressionBombError) as error:  # PIL's verify raises SyntaxError
        raise MapError(f"{path}: not a readable image ({error})") from None


@functools.lru_cache(maxsize=CACHED_MAPS)
def _padded(path: str, modified_ns: int, downsample: int, shape: tuple[int, int]) -> LoadedMap:
    """``path``'s map padded to ``shape``; ``modified_ns`` keys the cache, so a map file written
    again in place is read again."""
    loaded = load_map(path, downsample)
    height, width = loaded.occupied.shape
    occupied = np.pad(loaded.occupied, ((0, shape[0] - height), (0, shape[1] - width)), constant_values=True)
    occupied.flags.writeable = False  # shared by every episode that plays it
    return LoadedMap(occupied, loaded.marker)


def find_maps(map_dir: str) -> tuple[list[Path], list[str], tuple[str, ...]]:
    """The map files ``map_dir`` names, a folder or a glob pattern, their names relative to the
    folder (or to the pattern's leading folders without wildcards), in natural order, and the
    names of the other files found there, which are left out (a LICENSE, a README).

    Hidden files and subfolders of a folder are skipped silently. ``ValueError`` naming the
    spec when it finds no map file.
    """
    if Path(map_dir).is_dir():
        root = Path(map_dir)
        paths = [path for path in root.iterdir() if path.is_file() and not path.name.startswith(".")]
    elif any(char in map_dir for char in GLOB_CHARS):
        parts = Path(map_dir).parts
        root = Path(*parts[:next(i for i, part in enumerate(parts) if any(c in part for c in GLOB_CHARS))])
        paths = [Path(match) for match in glob.glob(map_dir, recursive=True) if Path(match).is_file()]
    else:
        raise ValueError(f"map_dir={map_dir!r} is neither a folder nor a glob pattern (such as 'maps/*.png')")
    named = sorted(((path.relative_to(root).as_posix(), path) for path in paths), key=lambda item: natural_key(item[0]))
    images_of_yamls = {named_image(path) for _, path in named if path.suffix.lower() in ROS_MAP_SUFFIXES}
    maps = [(name, path) for name, path in named
            if path.suffix.lower() in MAP_SUFFIXES and path.resolve() not in images_of_yamls]
    if not maps:
        raise ValueError(f"map_dir={map_dir!r} holds no map file (allowed suffixes: {', '.join(MAP_SUFFIXES)})")
    skipped = tuple(name for name, path in named if path.suffix.lower() not in MAP_SUFFIXES)
    return [path for _, path in maps], [name for name, _ in maps], skipped


def in_validation(name: str) -> bool:
    """Whether the map named ``name`` (relative to its collection) is in the ``validation`` split."""
    return zlib.crc32(name.encode()) % VALIDATION_EVERY == 0


def split_maps(paths: list[Path], names: list[str], split: str) -> tuple[list[Path], list[str]]:
    """The maps of ``split`` (``all``, ``train`` or ``validation``; module docstring), in order."""
    keep = [split == "all" or in_validation(name) == (split == "validation") for name in names]
    return [p for p, k in zip(paths, keep) if k], [n for n, k in zip(names, keep) if k]


def find_split(map_dir: str, split: str) -> tuple[list[Path], list[str], tuple[str, ...]]:
    """``find_maps`` narrowed to ``split``; ``ValueError`` when the split holds no map."""
    paths, names, skipped = find_maps(map_dir)
    paths, names = split_maps(paths, names, split)
    if not paths:
        raise ValueError(f"map_dir={map_dir!r} holds no map of map_split={split!r}")
    return paths, names, skipped


def map_collection(config: GridExploreConfig) -> MapCollection | None:
    """The maps ``config`` plays from files (None for procedural maps). A ``map_file`` is decoded
    at once; a ``map_dir``'s maps when first played, or by ``check_each``."""
    if config.map_dir is not None:
        paths, names, skipped = find_split(config.map_dir, config.map_split)
        return MapCollection(paths, names, config.map_downsample, skipped)
    if config.map_file is None:
        return None
    maps = MapCollection([Path(config.map_file)], [Path(config.map_file).name], config.map_downsample)
    maps.load(0)  # one file: decoded now, so that a bad one fails at construction
    return maps

