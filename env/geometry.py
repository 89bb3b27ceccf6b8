"""Grid geometry shared by sensing, the viewpoint graph and rendering: sight lines and discs.

Cells are addressed as (row, col). A straight segment between two cell centres covers every cell
whose *closed* square it touches, so a segment through an exact corner covers all four cells
around it: sight and motion never slip diagonally between two obstacles that share a corner, and
the covered set is the same in both directions and always 4-connected.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

# 4-neighbourhood as (row, col) offsets.
NEIGHBORS_4 = np.array([(-1, 0), (1, 0), (0, -1), (0, 1)], dtype=np.int64)


@lru_cache(maxsize=4096)
def line_cells(d_row: int, d_col: int) -> np.ndarray:
    """Cells covered by the segment from (0, 0) to (d_row, d_col), as [M, 2] (row, col) offsets.

    Exact integer test (separating axes for a segment and an axis-aligned square): a cell (i, j)
    is covered when it lies inside the segment's bounding box grown by half a cell and the square
    straddles the line: |d_col*i - d_row*j| <= (|d_row| + |d_col|) / 2.
    Sorted by distance from the origin so that index 0 is the origin itself.
    """
    rows = np.arange(min(0, d_row), max(0, d_row) + 1)
    cols = np.arange(min(0, d_col), max(0, d_col) + 1)
    ii, jj = np.meshgrid(rows, cols, indexing="ij")
    on_line = 2 * np.abs(d_col * ii - d_row * jj) <= abs(d_row) + abs(d_col)
    cells = np.stack([ii[on_line], jj[on_line]], axis=1)
    order = np.lexsort((cells[:, 1], cells[:, 0], (cells**2).sum(axis=1)))
    result = cells[order]
    result.flags.writeable = False
    return result


@lru_cache(maxsize=64)
def disc_offsets(radius: float) -> np.ndarray:
    """All (row, col) offsets within Euclidean ``radius`` of the origin, origin included, [D, 2]."""
    r = int(np.floor(radius))
    rows, cols = np.meshgrid(np.arange(-r, r + 1), np.arange(-r, r + 1), indexing="ij")
    inside = rows**2 + cols**2 <= radius**2
    result = np.stack([rows[inside], cols[inside]], axis=1)
    result.flags.writeable = False
    return result


@lru_cache(maxsize=64)
def sight_table(radius: int, row_stride: int) -> tuple[np.ndarray, np.ndarray]:
    """Flat offsets of the cells within ``radius`` and of what lies between the origin and each.

    Returns ``(cells [D], between [D, L])`` for a row-major grid whose rows are ``row_stride``
    long; ``between[d]`` lists the cells strictly between the origin and cell d along its sight
    line, padded with offset 0 (the origin, where the robot or viewpoint stands, which is free).
    The grid must be padded by more than ``radius`` cells so that every offset stays inside it.
    """
    offsets = disc_offsets(radius)
    lines = [line_cells(int(dr), int(dc))[1:-1] for dr, dc in offsets]
    width = max(1, max(len(line) for line in lines))
    between = np.zeros((len(offsets), width), dtype=np.int64)
    for d, line in enumerate(lines):
        between[d, : len(line)] = line[:, 0] * row_stride + line[:, 1]
    cells = offsets[:, 0] * row_stride + offsets[:, 1]
    cells.flags.writeable = False
    between.flags.writeable = False
    return cells, between


def flat_index(rc, pad: int, stride: int) -> np.ndarray:
    """Flat indices of [..., 2] (row, col) map cells in the grid padded by ``pad`` cells on every
    side, whose rows are ``stride`` cells long."""
    rc = np.asarray(rc)
    return (rc[..., 0] + pad) * stride + rc[..., 1] + pad


def map_cells(flat, pad: int, stride: int) -> np.ndarray:
    """[..., 2] (row, col) map cells of flat indices into that padded grid (``flat_index`` undone)."""
    rows, cols = np.divmod(np.asarray(flat), stride)
    return np.stack([rows, cols], axis=-1) - pad


def reachable_mask(occupied: np.ndarray, start: tuple[int, int]) -> np.ndarray:
    """Cells 4-connected to ``start`` through free cells, as a bool mask of ``occupied``'s shape."""
    height, width = occupied.shape
    free = ~occupied.ravel()
    seen = np.zeros(height * width, dtype=bool)
    first = start[0] * width + start[1]
    if not free[first]:
        raise ValueError(f"start {start} is an obstacle cell")
    seen[first] = True
    stamp = np.empty(height * width, dtype=np.int64)
    wave = np.array([first], dtype=np.int64)
    col_of = np.arange(height * width) % width
    while wave.size:
        # Breadth-first by whole waves keeps the Python loop as short as the map's diameter.
        up, down = wave - width, wave + width
        left = wave[col_of[wave] > 0] - 1
        right = wave[col_of[wave] < width - 1] + 1
        cand = np.concatenate([up[up >= 0], down[down < height * width], left, right])
        cand = cand[free[cand] & ~seen[cand]]
        # Keep one copy of each cell (duplicates would multiply wave after wave); a stamp array
        # does this in linear time, where np.unique would sort or hash.
        order = np.arange(cand.size)
        stamp[cand] = order
        cand = cand[stamp[cand] == order]
        seen[cand] = True
        wave = cand
    return seen.reshape(height, width)
