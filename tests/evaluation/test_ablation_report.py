"""The ablation's tables: every two settings' difference over seeds, and the sentence that answers."""
import pytest

from evaluation.ablation_report import markdown_table, seed_differences
from evaluation.stats import welch_difference_ci


def runs(label: str, ratios: list[float]) -> list[dict]:
    return [{"label": label, "seed": s, "ratio_to_nearest_frontier": r} for s, r in enumerate(ratios, 1)]


def rows(table: str) -> list[list[str]]:
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in table.splitlines()[2:]]


def test_every_later_setting_against_every_earlier_one_with_welchs_interval():
    one, two, four = [0.92, 0.93, 0.91], [0.90, 0.92, 0.91, 0.93], [0.95, 0.96, float("nan"), 0.94]
    table, answer = seed_differences(runs("h1", one) + runs("h2", two) + runs("h4", four))
    assert [row[:2] for row in rows(table)] == [["h2", "h1"], ["h4", "h1"], ["h4", "h2"]]
    clean_four = [0.95, 0.96, 0.94]  # a run with no completed episode (NaN) is left out
    for row, (new, base) in zip(rows(table), [(two, one), (clean_four, one), (clean_four, two)]):
        difference, half = welch_difference_ci(new, base)
        assert row[2] == f"{difference:+.3f} ± {half:.3f}"
        assert row[3] == f"{len(new)}, {len(base)}"
    # 4 heads against 1 and 2 (+0.030 ± 0.023, +0.035 ± 0.024) exclude 0; the widest bound is 0.059.
    assert answer.startswith("Intervals that exclude 0 (a difference at 95%): h4 against h1; h4 against h2.")
    widest = max(abs(d) + h for d, h in (welch_difference_ci(n, b) for n, b in
                                         [(two, one), (clean_four, one), (clean_four, two)]))
    assert answer.endswith(f"any interval allows is {widest:.3f}.")


def test_when_every_interval_holds_zero_it_names_the_largest_difference_allowed():
    one, two = [0.92, 0.93, 0.91], [0.91, 0.93, 0.92]
    _, answer = seed_differences(runs("h1", one) + runs("h2", two))
    difference, half = welch_difference_ci(two, one)
    assert difference == pytest.approx(0.0) and half > 0
    assert answer == (f"Every interval holds 0: no two settings differ in travel / nearest frontier by more than "
                      f"{half:.3f} at 95% confidence.")


def test_one_seed_gives_a_difference_but_no_interval_and_no_answer():
    table, answer = seed_differences(runs("h1", [0.92, 0.93]) + runs("h2", [0.90]))
    assert rows(table) == [["h2", "h1", "-0.025 (no interval: too few seeds)", "1, 2"]]
    assert answer == ""


def test_settings_table_gives_a_lone_seed_no_interval_and_several_students_t():
    results = [{**run, "parameters": 10, "success_rate": 1.0, "travel_to_complete": 200.0 + run["seed"],
                "ratio_to_greedy": 0.9, "final_return": 1.0, "sps": 50.0, "train_minutes": 3.0}
               for run in runs("h1", [0.92]) + runs("h2", [1.0, 2.0, 6.0])]
    one, several = rows(markdown_table(results))
    assert one[:3] == ["h1", "1", "10"] and one[4] == "201.0 (no interval)"  # a lone seed: never "± 0.0"
    assert one[5] == "0.920 (no interval)"
    # mean 3, sample std sqrt(7), t(0.975, 2 d.o.f.) = 4.303: half-width 4.303 * sqrt(7 / 3) = 6.573
    assert several[:2] == ["h2", "3"] and several[5] == "3.000 ± 6.573"
    assert several[3] == "1.00 ± 0.00"  # every seed alike: an interval of width 0 is a real one
