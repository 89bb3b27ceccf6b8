"""Confidence intervals and their formatting, against hand-computed values."""
import math

import pytest

from stats import format_mean_ci, mean_ci, t_quantile_975


def test_mean_ci_uses_students_t():
    mean, half = mean_ci([1.0, 2.0, 6.0])  # mean 3, sample std sqrt(7), 2 degrees of freedom
    assert mean == pytest.approx(3.0)
    assert half == pytest.approx(4.303 * math.sqrt(7) / math.sqrt(3))
    assert mean_ci([5.0]) == (5.0, 0.0)
    assert all(math.isnan(v) for v in mean_ci([]))


def test_t_quantile_approaches_the_normal_one():
    assert t_quantile_975(99) == pytest.approx(1.984, abs=1e-3)  # tabulated value for 99 df
    assert t_quantile_975(30) > t_quantile_975(31) > 1.96


def test_mean_ci_is_written_with_the_given_decimals_and_nothing_as_n_a():
    assert format_mean_ci(0.91234, 0.0249, 3) == "0.912 ± 0.025"
    assert format_mean_ci(*mean_ci([100.0, 200.0]), 1) == "150.0 ± 635.3"
    assert format_mean_ci(*mean_ci([]), 2) == "n/a"
