"""experiments.over_seeds: the per-seed rows and the mean over seeds, checked by hand, and its refusals."""
from __future__ import annotations

import json

import pytest

from experiments import over_seeds


def report(path, policies: dict[str, list[float]], seed: int = 0) -> str:
    """An evaluate.py --json report of ``policies`` (name -> travel per map), every map completed."""
    per_episode = {name: [{"success": True, "coverage": 1.0, "steps": 10, "travel_distance": travel,
                           "episodic_return": 0.0} for travel in travels] for name, travels in policies.items()}
    path.write_text(json.dumps({"seed": seed, "episodes": 2, "first_episode": 0, "env": {"kwargs": {}},
                                "per_episode": per_episode}))
    return str(path)


def test_rows_per_seed_and_the_mean_over_seeds(tmp_path, smoke_run, capsys):
    baselines = report(tmp_path / "b.json", {"greedy": [100.0, 200.0], "nearest_frontier": [200.0, 200.0]})
    one = report(tmp_path / "1.json", {"agent": [90.0, 180.0]})  # 0.9 of greedy on both maps
    two = report(tmp_path / "2.json", {"agent": [100.0, 220.0]})  # 1.0 and 1.1
    picture = tmp_path / "curves.png"
    assert over_seeds.main(["--runs", str(smoke_run), str(smoke_run), "--reports", one, two,
                            "--baselines", baselines, "--picture", str(picture)]) == 0
    out = capsys.readouterr().out
    assert "| 1.000 | 0.675 ± " in out  # nearest frontier: (0.45 + 0.9) / 2
    assert "| 1.050 ± " in out  # greedy, seed 2: (1.0 + 1.1) / 2
    assert "| mean over 2 seeds (95% CI over seeds) | | 0.738 ± " in out  # (0.675 + 0.8) / 2
    assert picture.stat().st_size > 10_000


def test_reports_of_other_maps_are_refused(tmp_path, smoke_run, capsys):
    baselines = report(tmp_path / "b.json", {"greedy": [1.0, 1.0], "nearest_frontier": [1.0, 1.0]})
    other = report(tmp_path / "o.json", {"agent": [1.0, 1.0]}, seed=1)
    with pytest.raises(SystemExit) as stopped:
        over_seeds.main(["--runs", str(smoke_run), "--reports", other, "--baselines", baselines])
    assert stopped.value.code == 2 and "played other maps than" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        over_seeds.main(["--runs", str(smoke_run), "--reports", baselines, "--baselines", baselines])
    assert "with agent" in capsys.readouterr().err
