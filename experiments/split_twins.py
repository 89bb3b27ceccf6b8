"""Is the validation split held out? Each validation map's nearest map in the training part.

    python -m experiments.split_twins --env map_dir=DUNGEON [--config configs/dungeon.yaml] [--within 50]

A validation figure is only as held out as its maps are: a validation map that repeats a map of
the training part is one the agent has trained on. Every map of the ``map_dir`` is decoded at the
config's ``map_downsample`` and padded with walls to the folder's largest shape, as the env plays
it (``env.map_collection.MapCollection.load``); each validation map (``map_split``'s rule,
``env.map_collection.in_validation``) is compared cell for cell with every map of the training
part. Prints the quantiles of the cells by which each validation map differs from its nearest
training map, and every pair that differs in at most ``--within`` cells (0: a twin, cell for cell).

On the reference's 5,663 floor plans at ``configs/dungeon.yaml``'s scale (80 x 60 cells, about
1,080 free a map) it takes about a minute and a half, most of it decoding the PNGs.
"""
from __future__ import annotations

import argparse
import sys

import numpy as np
from tqdm import tqdm

from config import load_config
from env.map_collection import MapCollection, find_maps, in_validation
from env.settings import GridExploreConfig
from learning.envs import with_env_overrides

CHUNK = 512
"""Training maps compared at a time: bounds the [V, CHUNK] float distances and the float copy of the maps."""


def cell_differences(validation: np.ndarray, train: np.ndarray, within: int
                     ) -> tuple[np.ndarray, list[tuple[int, int, int]]]:
    """Hamming distances between maps, flattened to rows of cells.

    validation bool [V, C], train bool [T, C] (True: a wall) -> (nearest [V], the fewest cells in
    which each validation map differs from any training map; close, every (validation row,
    training row, cells) with cells <= ``within``, in that order). The counts come from products
    of 0/1 floats, |v| + |t| - 2 v.t, exact below 2**24 cells a map.
    """
    if not len(train):
        raise ValueError("the training part holds no map to compare with")
    v = validation.astype(np.float32)
    v_walls = v.sum(1)
    nearest = np.full(len(v), np.inf, dtype=np.float32)
    close: list[tuple[int, int, int]] = []
    for start in range(0, len(train), CHUNK):
        t = train[start:start + CHUNK].astype(np.float32)
        cells = v_walls[:, None] + t.sum(1)[None, :] - 2 * (v @ t.T)  # [V, chunk]
        nearest = np.minimum(nearest, cells.min(1))
        close.extend((int(i), start + int(j), int(cells[i, j])) for i, j in zip(*np.nonzero(cells <= within)))
    return nearest.astype(np.int64), sorted(close)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="configs/dungeon.yaml", help="the env whose maps to read (default: %(default)s)")
    parser.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                        help="change an environment setting, as evaluate.py --env (repeatable); map_dir is needed")
    parser.add_argument("--within", type=int, default=50, metavar="CELLS",
                        help="list every pair differing in at most this many cells (default: %(default)s)")
    args = parser.parse_args()
    if args.within < 0:
        parser.error(f"--within {args.within}: a number of cells, 0 or more")
    try:  # a missing folder, a bad setting: one line naming it, no traceback
        settings = GridExploreConfig.from_kwargs(**with_env_overrides(load_config(args.config).env, args.env).kwargs)
    except ValueError as error:
        parser.error(str(error))
    if settings.map_dir is None:
        parser.error("the env plays no map folder: give one with --env map_dir=PATH")
    paths, names, _ = find_maps(settings.map_dir)
    maps = MapCollection(paths, names, settings.map_downsample)
    held_out = np.array([in_validation(name) for name in names])
    if held_out.all() or not held_out.any():
        parser.error(f"map_dir={settings.map_dir!r}: its {len(names)} maps are all in one part; nothing to compare")
    try:  # a damaged file or one without a free cell: named, in one line
        grids = np.stack([maps.load(i).occupied.reshape(-1)
                          for i in tqdm(range(len(maps)), desc="decoding maps", unit="map", file=sys.stderr)])
    except ValueError as error:
        parser.error(str(error))
    validation_rows, train_rows = np.flatnonzero(held_out), np.flatnonzero(~held_out)
    nearest, close = cell_differences(grids[validation_rows], grids[train_rows], args.within)

    height, width = maps.shape
    free = (~grids[validation_rows]).sum(1)
    print(f"{len(validation_rows)} validation maps against {len(train_rows)} of the training part, {height} x {width} "
          f"cells (downsample {settings.map_downsample}), {free.mean():.0f} free a validation map on average")
    quantiles = (0, 5, 25, 50, 75, 100)
    print("cells in which a validation map differs from its nearest training map, percentiles "
          + ", ".join(f"{q}: {value:.0f}" for q, value in zip(quantiles, np.percentile(nearest, quantiles))))
    print(f"pairs differing in at most {args.within} cells: {len(close)}")
    for i, j, cells in close:
        print(f"  {names[validation_rows[i]]} (validation, map {i} of the split) and {names[train_rows[j]]} "
              f"(training part): {cells} cells")
    return 0


if __name__ == "__main__":
    sys.exit(main())
