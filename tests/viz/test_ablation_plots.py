"""Learning-curve plots: a CI band only from 3 seeds on, kept inside the range of the values."""
import numpy as np
import pytest

from viz import ablation_plots


def run(label: str, coverage: list[float]) -> dict:
    steps = [50, 150, 250, 350]  # one point in each of 4 bins over 400 steps
    return {"label": label, "curves": {"coverage": (steps, coverage), "return": (steps, [-3.0, -1.0, 0.5, 2.0]),
                                       "travel": (steps, [300.0, 250.0, 230.0, 220.0])}}


@pytest.mark.parametrize("seeds, bands", [(2, 0), (3, 1)])
def test_band_from_three_seeds_on_and_coverage_band_within_0_and_1(seeds, bands, tmp_path, monkeypatch):
    figures = []
    monkeypatch.setattr(ablation_plots.plt, "close", figures.append)
    # Seeds far apart near coverage 1: an unclipped 95% band would reach well past 1 and below 0.
    runs = [run("a", [c, c, c, c]) for c in (1.0, 0.2, 1.0)[:seeds]]
    ablation_plots.learning_curves({"a": runs}, total_steps=400, path=tmp_path / "curves.png", bins=4)
    assert (tmp_path / "curves.png").stat().st_size > 0
    coverage_axis, return_axis, travel_axis = figures[0].axes
    assert len(coverage_axis.lines) == seeds + 1  # each seed, then the mean
    assert len(coverage_axis.collections) == len(return_axis.collections) == len(travel_axis.collections) == bands
    # Travel's axis shows the last three quarters in full (250, 230, 220), not the first bin (300).
    assert travel_axis.get_ylim() == pytest.approx((218.5, 251.5))
    steps = travel_axis.xaxis.get_major_formatter()
    assert (steps(0, 0), steps(40_000, 1), steps(160_000, 2)) == ("0", "40k", "160k")  # no run-together labels
    for band in coverage_axis.collections:
        y = np.concatenate([path.vertices[:, 1] for path in band.get_paths()])
        assert y.min() == 0.0 and y.max() == 1.0
