"""The maps an env plays from files: one ``map_file``, or a ``map_dir`` collection, one map an episode.

Building a collection reads only the files' headers (their sizes), so that every vector-env
worker builds its env cheaply; an episode decodes its map, and a small per-process cache keeps
the latest ones. ``MapCollection.check_each`` decodes every map, once per process: the check the
CLIs run before any episode (``rl.envs.check_env_config``).
"""
from __future__ import annotations

import functools
import glob
import numbers
import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from env.config import GridExploreConfig
from env.map_io import MAP_SUFFIXES, LoadedMap, load_map, map_shape

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

    def __init__(self, paths: list[Path], names: list[str], downsample: int):
        self.paths, self.names, self.downsample = paths, names, downsample
        shapes = [map_shape(path, downsample) for path in paths]  # headers only
        self.shape = (max(h for h, _ in shapes), max(w for _, w in shapes))

    def __deepcopy__(self, memo: dict) -> "MapCollection":
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
        """Whether this process has decoded every map of the collection (``check_each``)."""
        return self._key in _CHECKED

    def check_each(self) -> Iterator[str]:
        """Decode every map, yielding each one's name (a ``ValueError`` naming the file if it is
        unreadable, too small or large, or has no free cell); then ``checked`` is True."""
        for index, name in enumerate(self.names):
            self.load(index)  # through the cache: a map the check decodes is not decoded again for play
            yield name
        _CHECKED.add(self._key)

    @property
    def _key(self) -> tuple[tuple[str, ...], int]:
        return tuple(str(path) for path in self.paths), self.downsample


@functools.lru_cache(maxsize=CACHED_MAPS)
def _padded(path: str, modified_ns: int, downsample: int, shape: tuple[int, int]) -> LoadedMap:
    """``path``'s map padded to ``shape``; ``modified_ns`` keys the cache, so a map file written
    again in place is read again."""
    loaded = load_map(path, downsample)
    height, width = loaded.occupied.shape
    occupied = np.pad(loaded.occupied, ((0, shape[0] - height), (0, shape[1] - width)), constant_values=True)
    occupied.flags.writeable = False  # shared by every episode that plays it
    return LoadedMap(occupied, loaded.marker)


def find_maps(map_dir: str) -> tuple[list[Path], list[str]]:
    """The files ``map_dir`` names, a folder or a glob pattern, and their names relative to the
    folder (or to the pattern's leading folders without wildcards), in natural order.

    A folder's files must all be maps (hidden files and subfolders are skipped); so must a
    pattern's matches. ``ValueError`` naming the spec, or the first file that is not a map.
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
    if not paths:
        raise ValueError(f"map_dir={map_dir!r} holds no map file (allowed suffixes: {', '.join(MAP_SUFFIXES)})")
    others = sorted(path for path in paths if path.suffix.lower() not in MAP_SUFFIXES)
    if others:
        raise ValueError(f"map_dir={map_dir!r}: {others[0]} is not a map file ({len(others)} such file(s)); "
                         f"allowed suffixes: {', '.join(MAP_SUFFIXES)}; a glob such as "
                         f"{str(root / '*.png')!r} takes only the maps")
    named = sorted(((path.relative_to(root).as_posix(), path) for path in paths), key=lambda item: natural_key(item[0]))
    return [path for _, path in named], [name for name, _ in named]


def map_collection(config: GridExploreConfig) -> MapCollection | None:
    """The maps ``config`` plays from files (None for procedural maps). A ``map_file`` is decoded
    at once; a ``map_dir``'s maps when first played, or by ``check_each``."""
    if config.map_dir is not None:
        return MapCollection(*find_maps(config.map_dir), config.map_downsample)
    if config.map_file is None:
        return None
    maps = MapCollection([Path(config.map_file)], [Path(config.map_file).name], config.map_downsample)
    for _ in maps.check_each():
        pass
    return maps
