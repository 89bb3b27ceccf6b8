"""evaluate.py's table, from hand-made summaries (its end-to-end runs are in tests/rl/test_train.py)."""
import re

import pytest

import evaluate
import visualize
from evaluate import format_table
from rl.evaluation import EpisodeResult, summarise, travel_ratio


def episode(success: bool, travel: float) -> EpisodeResult:
    return EpisodeResult(success=success, coverage=1.0 if success else 0.4, steps=12, travel_distance=travel,
                         episodic_return=0.0)


def test_table_rows_hold_means_intervals_and_ratios_and_say_na_for_nothing_to_average():
    results = {"greedy": [episode(True, 100.0), episode(True, 200.0)],
               "random": [episode(False, 900.0), episode(False, 800.0)]}
    summaries = {name: summarise(r) for name, r in results.items()}
    ratios = {"greedy": {"random": travel_ratio(results["random"], results["greedy"])}}
    lines = format_table(summaries, ratios).splitlines()
    assert lines[0] == ("| policy | success rate | coverage at end | steps to complete | travel to complete "
                        "| travel / greedy |")
    # 150 ± 12.706 * std(100, 200) / sqrt(2) = 150 ± 635.3
    assert lines[2] == "| greedy | 1.000 ± 0.000 | 1.000 ± 0.000 | 12.0 ± 0.0 | 150.0 ± 635.3 | 1 (reference) |"
    assert lines[3] == "| random | 0.000 ± 0.000 | 0.400 ± 0.000 | n/a | n/a | n/a (n=0) |"


def test_output_paths_and_seeds_are_checked_before_any_episode(tmp_path, capsys, monkeypatch):
    def no_episodes(*args, **kwargs):
        raise AssertionError("an episode ran before the arguments were checked")

    monkeypatch.setattr(evaluate, "evaluate_actors", no_episodes)
    monkeypatch.setattr(visualize, "record_episode", no_episodes)
    (tmp_path / "a_file").write_text("")
    cases = [
        (evaluate.main, ["--policy", "greedy", "--json", str(tmp_path / "missing" / "r.json")], None),
        (evaluate.main, ["--policy", "greedy", "--json", str(tmp_path)], "--json: .* is a folder"),
        (evaluate.main, ["--policy", "greedy", "--gif", str(tmp_path / "a_file" / "x.gif")], "--gif: cannot write"),
        (evaluate.main, ["--policy", "greedy", "--seed", "-1"], "--seed must be >= 0, got -1"),
        (visualize.main, ["--checkpoint", str(tmp_path), "--fps", "0"], "--fps must be a finite number > 0, got 0.0"),
        (visualize.main, ["--checkpoint", str(tmp_path), "--query", "-2"], "--query must be >= 0, got -2"),
        (visualize.main, ["--checkpoint", str(tmp_path), "--out", str(tmp_path / "a_file")], "--out: .* is a file"),
    ]
    for main, argv, message in cases:
        if message is None:  # a folder that does not exist yet is made when writing: not an error
            with pytest.raises(AssertionError, match="an episode ran"):
                main(argv)
            continue
        with pytest.raises(SystemExit) as exit_code:
            main(argv)
        assert exit_code.value.code == 2
        assert re.search(message, capsys.readouterr().err), message
