"""Seeded procedural maps: rooms with doors, caves, mazes and scattered obstacles.

Every generator takes ``(height, width, rng, pitch)`` and returns a :class:`GridMap`. ``occupied``
is True for an obstacle; the outer ring is always wall. Rooms and mazes are laid out on a block
grid of ``pitch`` cells (one wall cell, ``pitch - 1`` open cells) and start the robot at a block
centre; the env passes its ``node_spacing`` as the pitch, so the viewpoint lattice, which is
anchored at the start, runs through every block centre and every door.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from env.geometry import reachable_mask


@dataclass(frozen=True)
class GridMap:
    """A ground-truth map and the robot's start cell."""

    occupied: np.ndarray
    """[H, W] bool, True for an obstacle."""
    start: tuple[int, int]
    """(row, col) of the start cell, always free."""


def _blank(height: int, width: int) -> np.ndarray:
    occupied = np.zeros((height, width), dtype=bool)
    occupied[[0, -1], :] = True
    occupied[:, [0, -1]] = True
    return occupied


def _blocks(length: int, pitch: int) -> int:
    """How many blocks fit along a side whose walls sit at multiples of ``pitch`` and at the end."""
    return (length - 2) // pitch + 1


def _block_centre(index: int, length: int, pitch: int) -> int:
    return min(index * pitch + pitch // 2, length - 2)


def _block_start(height: int, width: int, pitch: int, rng: np.random.Generator) -> tuple[int, int]:
    # Only blocks whose centre is a true centre (not clipped by the border) keep the lattice aligned.
    rows = [i for i in range(_blocks(height, pitch)) if i * pitch + pitch // 2 <= height - 2]
    cols = [j for j in range(_blocks(width, pitch)) if j * pitch + pitch // 2 <= width - 2]
    return (_block_centre(int(rng.choice(rows)), height, pitch),
            _block_centre(int(rng.choice(cols)), width, pitch))


def _span(index: int, length: int, pitch: int) -> slice:
    """The open cells of block ``index`` along a side."""
    return slice(index * pitch + 1, min((index + 1) * pitch, length - 1))


def rooms(height: int, width: int, rng: np.random.Generator, pitch: int) -> GridMap:
    """Recursive division into rooms; each dividing wall gets one door one block wide."""
    occupied = _blank(height, width)
    n_rows, n_cols = _blocks(height, pitch), _blocks(width, pitch)
    stack = [(0, n_rows, 0, n_cols)]
    while stack:
        i0, i1, j0, j1 = stack.pop()
        tall, wide = i1 - i0, j1 - j0
        # Stop at room-sized regions; a few larger ones stay open, as halls do.
        if tall * wide <= 4 or (min(tall, wide) < 2 or tall * wide <= 12) and rng.random() < 0.3:
            continue
        if tall > wide or (tall == wide and rng.random() < 0.5):
            cut = int(rng.integers(i0 + 1, i1))
            occupied[cut * pitch, j0 * pitch : min(j1 * pitch, width - 1) + 1] = True
            occupied[cut * pitch, _span(int(rng.integers(j0, j1)), width, pitch)] = False
            stack += [(i0, cut, j0, j1), (cut, i1, j0, j1)]
        else:
            cut = int(rng.integers(j0 + 1, j1))
            occupied[i0 * pitch : min(i1 * pitch, height - 1) + 1, cut * pitch] = True
            occupied[_span(int(rng.integers(i0, i1)), height, pitch), cut * pitch] = False
            stack += [(i0, i1, j0, cut), (i0, i1, cut, j1)]
    return GridMap(occupied, _block_start(height, width, pitch, rng))


def maze(height: int, width: int, rng: np.random.Generator, pitch: int) -> GridMap:
    """A depth-first-search maze on the block grid, with ~15% extra openings so it has loops."""
    n_rows, n_cols = _blocks(height, pitch), _blocks(width, pitch)
    occupied = np.ones((height, width), dtype=bool)
    for i in range(n_rows):
        for j in range(n_cols):
            occupied[_span(i, height, pitch), _span(j, width, pitch)] = False

    def open_between(a: tuple[int, int], b: tuple[int, int]) -> None:
        (i, j), (k, l) = sorted([a, b])
        if i == k:
            occupied[_span(i, height, pitch), l * pitch] = False
        else:
            occupied[k * pitch, _span(j, width, pitch)] = False

    visited = np.zeros((n_rows, n_cols), dtype=bool)
    first = (int(rng.integers(n_rows)), int(rng.integers(n_cols)))
    visited[first] = True
    path = [first]
    while path:
        i, j = path[-1]
        options = [(i + di, j + dj) for di, dj in ((-1, 0), (1, 0), (0, -1), (0, 1))
                   if 0 <= i + di < n_rows and 0 <= j + dj < n_cols and not visited[i + di, j + dj]]
        if not options:
            path.pop()
            continue
        nxt = options[int(rng.integers(len(options)))]
        open_between((i, j), nxt)
        visited[nxt] = True
        path.append(nxt)
    for i in range(n_rows):
        for j in range(n_cols):
            for nxt in ((i + 1, j), (i, j + 1)):
                if nxt[0] < n_rows and nxt[1] < n_cols and rng.random() < 0.15:
                    open_between((i, j), nxt)
    return GridMap(occupied, _block_start(height, width, pitch, rng))


def largest_free_component(occupied: np.ndarray) -> np.ndarray:
    """Bool mask of the largest 4-connected free area of ``occupied``."""
    remaining = ~occupied
    best = np.zeros_like(occupied)
    while remaining.sum() > best.sum():
        seed_cell = tuple(int(v) for v in np.argwhere(remaining)[0])
        component = reachable_mask(occupied, seed_cell)
        remaining &= ~component
        if component.sum() > best.sum():
            best = component
    if not best.any():
        raise ValueError("the map has no free cell")
    return best


def random_cell(mask: np.ndarray, rng: np.random.Generator) -> tuple[int, int]:
    """A uniformly drawn (row, col) where ``mask`` is True."""
    cells = np.argwhere(mask)
    cell = cells[int(rng.integers(len(cells)))]
    return int(cell[0]), int(cell[1])


def _keep_largest_cave(occupied: np.ndarray, rng: np.random.Generator) -> GridMap:
    # Pockets the robot can never reach would only clutter the picture: fill them with rock.
    cave = largest_free_component(occupied)
    return GridMap(~cave, random_cell(cave, rng))


def caves(height: int, width: int, rng: np.random.Generator, pitch: int) -> GridMap:
    """Cellular-automaton caves: 42% random rock, smoothed by the 4-5 rule, largest cave kept;
    drawn again where the smoothing left no free cell at all (it can, on small maps)."""
    del pitch  # caves have no block grid
    while True:
        occupied = rng.random((height, width)) < 0.42
        for _ in range(4):
            padded = np.pad(occupied, 1, constant_values=True)
            rock_around = sum(np.roll(np.roll(padded, dr, 0), dc, 1)
                              for dr in (-1, 0, 1) for dc in (-1, 0, 1) if dr or dc)[1:-1, 1:-1]
            occupied = np.where(occupied, rock_around >= 4, rock_around >= 5)
            occupied |= _blank(height, width)
        if not occupied.all():
            return _keep_largest_cave(occupied, rng)


def obstacles(height: int, width: int, rng: np.random.Generator, pitch: int) -> GridMap:
    """Rectangular obstacles scattered over an open floor until about 15% of it is covered."""
    del pitch  # obstacles have no block grid
    occupied = _blank(height, width)
    target = 0.15 * (height - 2) * (width - 2)
    while occupied[1:-1, 1:-1].sum() < target:
        h, w = (int(v) for v in rng.integers(1, 5, size=2))
        r, c = int(rng.integers(1, height - 1)), int(rng.integers(1, width - 1))
        occupied[r : r + h, c : c + w] = True
    occupied |= _blank(height, width)
    return _keep_largest_cave(occupied, rng)


GENERATORS: dict[str, Callable[[int, int, np.random.Generator, int], GridMap]] = {
    "rooms": rooms,
    "caves": caves,
    "maze": maze,
    "obstacles": obstacles,
}
MAP_FAMILIES = tuple(GENERATORS)


def generate(family: str, height: int, width: int, rng: np.random.Generator, pitch: int) -> GridMap:
    """One map of ``family`` (a key of :data:`GENERATORS`)."""
    if family not in GENERATORS:
        raise ValueError(f"unknown map family {family!r}; allowed: {', '.join(MAP_FAMILIES)}")
    return GENERATORS[family](height, width, rng, pitch)
