"""Frontier detection: known-free cells next to unknown ones."""
from __future__ import annotations

import numpy as np

from env.sensing import FREE, UNKNOWN


def frontier_mask(belief: np.ndarray, connectivity: int = 4) -> np.ndarray:
    """Bool mask of the frontier of a 2-D ``belief`` map.

    A frontier cell is FREE and has an UNKNOWN 4-neighbour (``connectivity=4``) or 8-neighbour
    (``connectivity=8``). Cells beyond the array's edge count as known. The env uses 4: the
    sensor resolves a visible cell's 4-neighbours, so every 4-frontier it can see, it can clear.
    """
    if connectivity not in (4, 8):
        raise ValueError(f"connectivity must be 4 or 8, got {connectivity}")
    unknown = belief == UNKNOWN
    near = np.zeros_like(unknown)
    near[1:, :] |= unknown[:-1, :]
    near[:-1, :] |= unknown[1:, :]
    near[:, 1:] |= unknown[:, :-1]
    near[:, :-1] |= unknown[:, 1:]
    if connectivity == 8:
        near[1:, 1:] |= unknown[:-1, :-1]
        near[1:, :-1] |= unknown[:-1, 1:]
        near[:-1, 1:] |= unknown[1:, :-1]
        near[:-1, :-1] |= unknown[1:, 1:]
    return near & (belief == FREE)
