"""Means with 95% confidence intervals, and how they are written: one definition for every table.

numpy only, so ``evaluation/`` (reports), ``viz/`` (plots) and the command-line programs share it
without ``viz/`` importing anything else of this layer.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

# Two-sided 95% quantiles of Student's t for 1..30 degrees of freedom (standard tables).
_T_975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
          2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
          2.045, 2.042)


def t_quantile_975(df: int) -> float:
    """Student's t quantile for a 95% interval; past the table, the expansion z + (z^3 + z) / (4 df)."""
    if df <= len(_T_975):
        return _T_975[df - 1]
    z = 1.959964
    return z + (z**3 + z) / (4 * df)


def mean_ci(values: Sequence[float]) -> tuple[float, float]:
    """Mean and half-width of its 95% confidence interval (Student's t, so 3 seeds get a wide
    one, as they should); the half-width is NaN for a single value (one value has no spread to
    estimate, and 0 would claim certainty), both NaN for none."""
    if not len(values):
        return float("nan"), float("nan")
    x = np.asarray(values, dtype=float)
    half = t_quantile_975(len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x)) if len(x) > 1 else float("nan")
    return float(x.mean()), float(half)


def welch_difference_ci(a: Sequence[float], b: Sequence[float]) -> tuple[float, float]:
    """``mean(a) - mean(b)`` and the half-width of its 95% confidence interval by Welch's t: the
    two samples independent, their variances not assumed equal, the degrees of freedom
    Welch-Satterthwaite's, rounded down (the wider interval). The half-width is NaN when either
    sample has fewer than two values (no variance to estimate); both are NaN when one is empty.
    """
    if not len(a) or not len(b):
        return float("nan"), float("nan")
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    difference = float(x.mean() - y.mean())
    if len(x) < 2 or len(y) < 2:
        return difference, float("nan")
    var_x, var_y = x.var(ddof=1) / len(x), y.var(ddof=1) / len(y)  # squared standard errors
    se = math.sqrt(var_x + var_y)
    if se == 0.0:
        return difference, 0.0
    df = (var_x + var_y) ** 2 / (var_x**2 / (len(x) - 1) + var_y**2 / (len(y) - 1))
    return difference, t_quantile_975(max(1, math.floor(df))) * se


def format_mean_ci(mean: float, half: float, decimals: int) -> str:
    """``mean ± half`` with ``decimals`` places; "n/a" when there was nothing to average, and
    ``mean (no interval)`` for a single value, never ``± 0``."""
    if math.isnan(mean):
        return "n/a"
    if math.isnan(half):
        return f"{mean:.{decimals}f} (no interval)"
    return f"{mean:.{decimals}f} ± {half:.{decimals}f}"
