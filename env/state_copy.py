"""Copies for play-outs: what an episode changes is copied, what it never changes is shared.

``copy.deepcopy`` of an env walks every object it holds, the observation space's boxes and the
map's lattice included, though an episode never changes them: that walk was most of a play-out
copy's cost. ``copy_except`` copies one level instead and names what is shared.
"""
from __future__ import annotations

import copy
from typing import TypeVar

import numpy as np

T = TypeVar("T")

IMMUTABLE = (bool, int, float, str, bytes, type(None))


def copy_except(obj: T, shared: frozenset[str]) -> T:
    """A copy of ``obj`` that shares the attributes named in ``shared`` and copies the others.

    An array, list or dict attribute gets a copy of its own, one level deep: the elements of a
    list or a dict are shared, so they must be values no step changes in place (tuples, numbers,
    arrays that are replaced, never written into). Numbers, strings and None are shared as any
    copy shares them. Any other object is deep-copied (``copy.deepcopy``, which an object may
    define for itself, as ``ViewpointGraph`` does). An attribute added later is therefore copied
    unless it is named in ``shared``: forgetting to name one costs time, never correctness.
    """
    twin = copy.copy(obj)
    for name, value in vars(obj).items():
        if name in shared or isinstance(value, IMMUTABLE):
            continue
        if isinstance(value, (np.ndarray, list, dict)):
            setattr(twin, name, value.copy())
        else:
            setattr(twin, name, copy.deepcopy(value))
    return twin
