"""Argument checks shared by the modules and the config: each rule, and its message, written once.

A module checks its constructor arguments with these (``n_heads=3 must divide embed_dim=32``);
``config.py`` runs the same checks on the YAML values with the dotted key as the name and
``ConfigError`` as the error (``model.n_heads=3 must divide model.embed_dim=128``), so a bad
setting is refused before a run writes anything.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any


def check_at_least_one(name: str, value: int, error: type[Exception] = ValueError) -> None:
    """A count (layers, heads, envs, steps) must be >= 1."""
    if value < 1:
        raise error(f"{name} must be >= 1, got {value}")


def check_positive(name: str, value: float, error: type[Exception] = ValueError) -> None:
    """A scale (the pointer's tanh clipping C, a learning rate) must be finite and > 0."""
    if not (math.isfinite(value) and value > 0):
        raise error(f"{name} must be a finite number > 0, got {value}")


def check_non_negative(name: str, value: float, error: type[Exception] = ValueError) -> None:
    """A weight or a bound that may be switched off with 0 (an entropy coefficient, a seed) must be finite and >= 0."""
    if not (math.isfinite(value) and value >= 0):
        raise error(f"{name} must be a finite number >= 0, got {value}")


def check_divides(n_heads: int, embed_dim: int, prefix: str = "", error: type[Exception] = ValueError) -> None:
    """The heads split the embedding into equal parts, so ``n_heads`` must divide ``embed_dim``."""
    if n_heads < 1 or embed_dim % n_heads != 0:
        divisors = [h for h in range(1, embed_dim + 1) if embed_dim % h == 0]
        raise error(f"{prefix}n_heads={n_heads} must divide {prefix}embed_dim={embed_dim}; "
                    f"allowed head counts: {divisors}")


def check_choice(name: str, value: Any, allowed: Sequence[Any], error: type[Exception] = ValueError) -> None:
    """``value`` must be one of ``allowed``."""
    if value not in allowed:
        raise error(f"{name!r} must be one of {list(allowed)}, got {value!r}")
