"""Travel ratios and summaries, against hand-computed values; the order maps are played in, and a stop."""
import math
from itertools import pairwise
from types import SimpleNamespace

import numpy as np
import pytest
from PIL import Image

from config import EnvConfig
from env.baselines import BASELINES
from env.episode import EpisodeResult
from evaluation.play import (
    evaluate_actors,
    finished_report,
    map_dir_size,
    played_maps,
    stopped_note,
    summarise,
    travel_ratio,
)
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
    travel, half = summary["travel_to_complete"]
    assert travel == 90.0 and math.isnan(half)  # one completed episode: no interval


def test_over_a_map_dir_episode_i_plays_map_i_in_any_chunk_of_episodes(tmp_path):
    env_config = EnvConfig(kwargs={"map_dir": str(write_maps(tmp_path / "maps")), "max_steps": 30})
    assert map_dir_size(env_config) == 4 and map_dir_size(EnvConfig()) is None
    actors = {"nearest_frontier": BASELINES["nearest_frontier"]}
    serial = evaluate_actors(actors, env_config, 4, seed=0, progress=False)["nearest_frontier"]
    assert [r.map_file for r in serial] == MAP_ORDER
    chunk = evaluate_actors(actors, env_config, 2, seed=0, progress=False, first_episode=2)["nearest_frontier"]
    assert chunk == serial[2:]  # what a Ray task given episodes 2..3 plays


def test_every_actor_plays_a_map_before_the_next_and_a_stop_ends_after_the_map_in_play():
    env_config = EnvConfig(kwargs={"map_size": 16, "max_steps": 40})
    names = ("greedy", "nearest_frontier")
    starts, stop = [], SimpleNamespace(requested=None)  # the actors' episodes, in the order they began

    def watched(name):
        def act(obs, env):
            if env.steps == 0:
                starts.append(name)
                if starts.count("nearest_frontier") == 2:
                    stop.requested = "SIGINT"  # as StopOnSignal notes a signal: mid-episode, second map
            return BASELINES[name](obs, env)
        return act

    whole = evaluate_actors({name: BASELINES[name] for name in names}, env_config, 4, seed=0, progress=False)
    stopped = evaluate_actors({name: watched(name) for name in names}, env_config, 4, seed=0, progress=False, stop=stop)
    assert starts == ["greedy", "nearest_frontier"] * 2  # map by map; no third map began
    assert played_maps(stopped) == 2  # the map in play was finished
    assert stopped == {name: results[:2] for name, results in whole.items()}
    report, code = finished_report(stopped, stop, 4, 0, env_config)
    assert (report["episodes"], report["stopped_by"], code) == (2, "SIGINT", 130)
    last_map = finished_report(whole, stop, 4, 0, env_config)  # a signal during the last map lost nothing
    assert (last_map[0]["stopped_by"], last_map[1]) == (None, 0)
    assert finished_report({name: [] for name in names}, stop, 4, 0, env_config) == (None, 130)
    assert stopped_note("SIGINT", 2, 4) == "stopped by SIGINT after 2 of 4 maps: what follows covers those 2"
    assert stopped_note("SIGTERM", 0, 4) == "stopped by SIGTERM before the first map finished; nothing to report"
    assert stopped_note(None, 4, 4) is None


def test_the_report_counts_the_cycles_broken_and_the_table_foot_names_them():
    from config import EnvConfig
    from env.episode import EpisodeResult
    from evaluation.play import cycles_line, evaluation_report

    def episode(broken):
        return EpisodeResult(True, 1.0, 10, 30.0, -3.0, cycles_broken=broken)

    results = {"agent": [episode(0), episode(2), episode(1)], "greedy": [episode(0)] * 3}
    report = evaluation_report(results, 3, 0, EnvConfig())
    assert report["cycles_broken"] == {"agent": {"cycles": 3, "maps": 2}, "greedy": {"cycles": 0, "maps": 0}}
    assert cycles_line(report).endswith("docs/environment.md): agent 3 on 2 of 3 maps")
    assert cycles_line(evaluation_report({"greedy": [episode(0)]}, 1, 0, EnvConfig())).endswith(": none")


def test_the_gif_is_of_the_first_actors_first_map_enlarged_with_a_step_label_per_frame(tmp_path):
    env_config = EnvConfig(kwargs={"map_size": 16, "max_steps": 40})
    results = evaluate_actors({"greedy": BASELINES["greedy"], "random": BASELINES["random"]}, env_config, 2, seed=0,
                              gif=tmp_path / "episode.gif", progress=False)
    with Image.open(tmp_path / "episode.gif") as gif:
        assert gif.n_frames == results["greedy"][0].steps + 1  # the reset, then every move
        width, height = gif.size
        assert width == 512 and 20 <= height - width <= 60  # 16 x 16 cells, 4 x 8 px each, under a caption band
        bands = []
        for i in range(gif.n_frames):
            gif.seek(i)
            bands.append(np.asarray(gif.convert("RGB"))[: height - width])
    assert all(not np.array_equal(a, b) for a, b in pairwise(bands))
