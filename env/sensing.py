"""The belief map and the 360-degree line-of-sight sensor that fills it in.

All arrays here are *flat* views of a grid padded on every side with wall, wider than the sensor
reaches, so a sensor sweep is one fancy-indexing gather with no bounds checks.
"""
from __future__ import annotations

import numpy as np

from env.geometry import sight_table

UNKNOWN, FREE, OCCUPIED = 0, 1, 2
"""Belief cell values (int8)."""


class Sensor:
    """A sensor of ``sensor_range`` cells whose sight is blocked by obstacles.

    From a cell ``p`` it observes every cell ``c`` within range whose sight line (see
    :func:`env.geometry.line_cells`) has no obstacle strictly between ``p`` and ``c``, plus the
    4-neighbours of every free cell it observes: seeing into a cell, it sees the sides of it.
    That second rule guarantees that standing where a frontier cell is visible resolves it, so a
    robot that visits a viewpoint with utility always learns something.
    """

    def __init__(self, sensor_range: int, row_stride: int) -> None:
        self.cells, self.between = sight_table(sensor_range, row_stride)
        self.around = np.array([-row_stride, row_stride, -1, 1], dtype=np.int64)

    def observe(self, occupied: np.ndarray, positions: np.ndarray) -> np.ndarray:
        """Sorted unique flat indices observed from any of ``positions`` (flat indices, [P]).

        ``occupied`` is the flat, padded ground truth (bool).
        """
        blocked = occupied[positions[:, None, None] + self.between].any(axis=2)  # [P, D]
        seen = (positions[:, None] + self.cells)[~blocked]
        free_seen = seen[~occupied[seen]]
        # A bitmap dedupes faster than np.unique at these sizes.
        mark = np.zeros(occupied.size, dtype=bool)
        mark[seen] = True
        mark[(free_seen[:, None] + self.around).ravel()] = True
        return np.flatnonzero(mark)


def reveal(belief: np.ndarray, truth: np.ndarray, observed: np.ndarray) -> np.ndarray:
    """Copy ``truth`` into ``belief`` at ``observed`` (flat arrays); return the newly known indices."""
    new = observed[belief[observed] == UNKNOWN]
    belief[new] = truth[new]
    return new
