"""evaluate.py's table, from hand-made summaries (its end-to-end runs are in tests/rl/test_train.py)."""
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
