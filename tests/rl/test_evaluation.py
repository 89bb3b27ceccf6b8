"""Travel ratios and summaries, against hand-computed values."""
import math

import pytest

from config import EnvConfig
from env.baselines import BASELINES
from rl.evaluation import EpisodeResult, evaluate_actors, map_dir_size, summarise, travel_ratio
from tests.map_folders import MAP_ORDER, write_maps


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


def test_over_a_map_dir_episode_i_plays_map_i_in_any_chunk_of_episodes(tmp_path):
    env_config = EnvConfig(kwargs={"map_dir": str(write_maps(tmp_path / "maps")), "max_steps": 30})
    assert map_dir_size(env_config) == 4 and map_dir_size(EnvConfig()) is None
    actors = {"nearest_frontier": BASELINES["nearest_frontier"]}
    serial = evaluate_actors(actors, env_config, 4, seed=0, progress=False)["nearest_frontier"]
    assert [r.map_file for r in serial] == MAP_ORDER
    chunk = evaluate_actors(actors, env_config, 2, seed=0, progress=False, first_episode=2)["nearest_frontier"]
    assert chunk == serial[2:]  # what a Ray task given episodes 2..3 plays
