"""Digests of an env's state: equal digests, equal futures (``GridExploreEnv.state_key``).

A greedy play-out after the robot leaves greedy's plan often walks back into a state the old plan
passes through; from there on both play out alike, and ``env.greedy_value.GreedyValue`` reuses the
old plan's tail instead of playing it again. Telling that two states are the same means comparing
everything a move's outcome depends on; its SHA-256 digest stands for the whole (two different
states share one with a probability of about 2**-256). SHA-256, because CPUs with the SHA
extensions hash it faster than BLAKE2b.
"""
from __future__ import annotations

import hashlib
from typing import Any

import numpy as np


def new_digest() -> "hashlib._Hash":
    """The hash object a state is fed into."""
    return hashlib.sha256()


def feed(h: "hashlib._Hash", value: Any) -> None:
    """Feed ``value`` to ``h``: an array with its dtype and shape, a dict item by item in key
    order, a tuple item by item, a number, a bool, a string or None by its type and ``repr``.
    Anything else is refused, so that a new kind of state cannot slip past the digest unseen."""
    if isinstance(value, np.ndarray):
        h.update(f"{value.dtype.str}{value.shape}".encode())
        h.update(np.ascontiguousarray(value).data)
    elif isinstance(value, dict):
        h.update(f"dict{len(value)}".encode())
        for key in sorted(value):
            feed(h, key)
            feed(h, value[key])
    elif isinstance(value, tuple):
        h.update(f"tuple{len(value)}".encode())
        for item in value:
            feed(h, item)
    elif value is None or isinstance(value, (bool, int, float, str, np.integer, np.floating)):
        h.update(f"{type(value).__name__}:{value!r};".encode())
    else:
        raise TypeError(f"cannot digest a {type(value).__name__}")
