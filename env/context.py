"""Context features: how much of the map around each node is still unknown, and how much is free.

The five base node features say where a node is (relative to the robot), how many frontier
cells it sees and whether it was visited; they say nothing about the map a little further out:
whether a frontier opens onto a large unexplored part of the map or onto a pocket against the
map's edge. ``context_features=True`` (``env.settings``) adds four columns, read from the belief:

    unknown_near, free_near   fractions of the (2R + 1)^2 square around the node, R = sensor_range
    unknown_far,  free_far    the same for R = 2 sensor_range

A window's cells outside the map count as neither (the belief holds them as walls), so a node
near the map's edge sees less unknown. Each is one lookup in a summed-area table of the belief,
built once per belief change: O(map cells + nodes).

``privileged_features=True`` adds two columns read from the *true* map, which no deployable policy
may see: the fractions of the same two squares that are unknown and yet free (reachable) on the
true map, i.e. how much a node's surroundings still hide. They are a diagnostic: a policy given
them shows how much a perfect prediction of the unseen map would be worth (docs/results.md,
section 4).
"""
from __future__ import annotations

import numpy as np

from env.sensing import FREE, UNKNOWN

CONTEXT_FEATURE_NAMES = ("unknown_near", "free_near", "unknown_far", "free_far")
PRIVILEGED_FEATURE_NAMES = ("hidden_free_near", "hidden_free_far")
CONTEXT_SCALES = (1, 2)
"""Window half-sides of the near and far columns, in sensor ranges."""


def summed_area(mask: np.ndarray) -> np.ndarray:
    """[H+1, W+1] int64 table whose entry (r, c) counts the True cells of ``mask[:r, :c]``."""
    table = np.zeros((mask.shape[0] + 1, mask.shape[1] + 1), dtype=np.int64)
    np.cumsum(np.cumsum(mask, axis=0), axis=1, out=table[1:, 1:])
    return table


def window_counts(table: np.ndarray, rc: np.ndarray, half: int) -> np.ndarray:
    """[n] counts of ``table``'s mask in the squares of half-side ``half`` centred on ``rc`` [n, 2]
    (rows and columns of the mask), clipped to the mask's bounds."""
    high = np.array(table.shape) - 1
    low_rc = np.clip(rc - half, 0, high)
    high_rc = np.clip(rc + half + 1, 0, high)
    r0, c0 = low_rc[:, 0], low_rc[:, 1]
    r1, c1 = high_rc[:, 0], high_rc[:, 1]
    return table[r1, c1] - table[r0, c1] - table[r1, c0] + table[r0, c0]


def window_fractions(masks: list[np.ndarray], node_rc: np.ndarray, sensor_range: int) -> np.ndarray:
    """[n, 2 len(masks)] float32: for each scale of ``CONTEXT_SCALES`` in turn, the fraction of each
    mask's True cells in the square of that many sensor ranges around each node at ``node_rc`` [n, 2]."""
    tables = [summed_area(mask) for mask in masks]
    columns = []
    for scale in CONTEXT_SCALES:
        half = scale * sensor_range
        area = float((2 * half + 1) ** 2)
        columns += [window_counts(table, node_rc, half) / area for table in tables]
    return np.stack(columns, axis=1).astype(np.float32)


def context_features(belief: np.ndarray, node_rc: np.ndarray, sensor_range: int) -> np.ndarray:
    """[n, 4] float32 columns of ``CONTEXT_FEATURE_NAMES`` for nodes at ``node_rc`` [n, 2] (rows and
    columns of the 2-D ``belief``, padding included), each in [0, 1]."""
    return window_fractions([belief == UNKNOWN, belief == FREE], node_rc, sensor_range)


def privileged_features(belief: np.ndarray, reachable: np.ndarray, node_rc: np.ndarray,
                        sensor_range: int) -> np.ndarray:
    """[n, 2] float32 columns of ``PRIVILEGED_FEATURE_NAMES``: the fractions of the near and far
    squares that are still unknown in ``belief`` and free and reachable on the true map
    (``reachable``, the belief's shape): what a node's surroundings still hide to explore."""
    return window_fractions([(belief == UNKNOWN) & reachable], node_rc, sensor_range)
