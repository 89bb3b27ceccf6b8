"""Confidence intervals and their formatting, against hand-computed values."""
import math

import numpy as np
import pytest

from evaluation.stats import format_mean_ci, mean_ci, t_quantile_975, welch_difference_ci


def test_mean_ci_uses_students_t():
    mean, half = mean_ci([1.0, 2.0, 6.0])  # mean 3, sample std sqrt(7), 2 degrees of freedom
    assert mean == pytest.approx(3.0)
    assert half == pytest.approx(4.303 * math.sqrt(7) / math.sqrt(3))
    mean, half = mean_ci([5.0])  # one value: no spread to estimate, so no interval (not 0)
    assert mean == 5.0 and math.isnan(half)
    assert all(math.isnan(v) for v in mean_ci([]))


def test_t_quantile_approaches_the_normal_one():
    assert t_quantile_975(99) == pytest.approx(1.984, abs=1e-3)  # tabulated value for 99 df
    assert t_quantile_975(30) > t_quantile_975(31) > 1.96


def test_mean_ci_is_written_with_the_given_decimals_and_nothing_as_n_a():
    assert format_mean_ci(0.91234, 0.0249, 3) == "0.912 ± 0.025"
    assert format_mean_ci(*mean_ci([100.0, 200.0]), 1) == "150.0 ± 635.3"
    assert format_mean_ci(*mean_ci([]), 2) == "n/a"
    assert format_mean_ci(*mean_ci([0.95]), 3) == "0.950 (no interval)"  # never "± 0.000"


def test_welch_interval_against_hand_computed_values():
    # a: mean 2, variance 1, 3 values; b: mean 7, variance 20/3, 4 values.
    # Squared standard error 1/3 + (20/3)/4 = 2; Welch-Satterthwaite df 2^2 / ((1/3)^2/2 + (5/3)^2/3)
    # = 216/53 = 4.08, rounded down to 4: t = 2.776.
    difference, half = welch_difference_ci([1.0, 2.0, 3.0], [4.0, 6.0, 8.0, 10.0])
    assert difference == pytest.approx(-5.0)
    assert half == pytest.approx(2.776 * math.sqrt(2.0))
    assert welch_difference_ci([1.0, 1.0], [0.0, 0.0]) == (1.0, 0.0)


def test_welch_interval_without_a_variance_to_estimate():
    difference, half = welch_difference_ci([0.9], [0.8, 0.85])
    assert difference == pytest.approx(0.075) and math.isnan(half)
    assert all(math.isnan(v) for v in welch_difference_ci([], [1.0, 2.0]))


def test_welch_interval_covers_the_true_difference_95_percent_of_the_time():
    # Few seeds, unequal spreads and sizes: where a pooled-variance t (0.78 here) or a normal quantile
    # would cover too rarely. Welch-Satterthwaite is an approximation, a little short with 3 values
    # (0.939 here). 4,000 simulated pairs of samples, true difference 0.5.
    rng = np.random.default_rng(0)
    covered = 0
    for _ in range(4000):
        a, b = rng.normal(0.5, 3.0, 3), rng.normal(0.0, 1.0, 8)
        difference, half = welch_difference_ci(a, b)
        covered += abs(difference - 0.5) <= half
    assert 0.93 <= covered / 4000 <= 0.985
