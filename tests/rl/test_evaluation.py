"""Travel ratios and summaries, against hand-computed values."""
import math

import pytest

from rl.evaluation import EpisodeResult, summarise, travel_ratio


def result(success, travel):
    return EpisodeResult(success=success, coverage=1.0 if success else 0.5, steps=10, travel_distance=travel, episodic_return=0.0)


def test_travel_ratio_pairs_maps_and_skips_incomplete_ones():
    ours = [result(True, 90.0), result(False, 500.0), result(True, 120.0)]
    nearest = [result(True, 100.0), result(True, 100.0), result(True, 100.0)]
    mean, half, n = travel_ratio(ours, nearest)
    assert n == 2 and mean == pytest.approx((0.9 + 1.2) / 2)
    assert half == pytest.approx(12.706 * math.sqrt(((0.9 - 1.05) ** 2 + (1.2 - 1.05) ** 2)) / math.sqrt(2))


def test_summary_counts_steps_and_travel_over_completed_episodes_only():
    summary = summarise([result(True, 90.0), result(False, 500.0)])
    assert summary["success_rate"][0] == 0.5
    assert summary["travel_to_complete"] == (90.0, 0.0)
