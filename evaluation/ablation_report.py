"""Ablation results: one CSV row per run, a Markdown table per setting with 95% CIs, and every two
settings' difference with its 95% CI over seeds."""
from __future__ import annotations

import csv
import itertools
import math
from collections import defaultdict
from pathlib import Path

from evaluation.stats import format_mean_ci, mean_ci, welch_difference_ci

COLUMNS = ["label", "seed", "parameters", "success_rate", "coverage", "travel_to_complete",
           "ratio_to_nearest_frontier", "ratio_to_greedy", "final_return", "sps", "train_minutes", "run_dir", "node"]
METRICS = {  # column -> (header, decimals)
    "success_rate": ("success rate", 2),
    "travel_to_complete": ("travel to complete (cells)", 1),
    "ratio_to_nearest_frontier": ("travel / nearest frontier", 3),
    "ratio_to_greedy": ("travel / greedy", 3),
    "final_return": ("final return", 2),
    "sps": ("training SPS", 0),
    "train_minutes": ("training minutes", 1),
}


def measured(runs: list[dict], column: str) -> list[float]:
    """``column`` of each run, NaNs (no completed episode) left out."""
    return [r[column] for r in runs if r[column] == r[column]]


def by_setting(results: list[dict]) -> dict[str, list[dict]]:
    """Results grouped by setting label, in the order the settings first appear."""
    groups: dict[str, list[dict]] = defaultdict(list)
    for result in results:
        groups[result["label"]].append(result)
    return groups


def write_csv(results: list[dict], path: Path) -> None:
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore")
        writer.writeheader()
        for result in sorted(results, key=lambda r: (r["label"], r["seed"])):
            writer.writerow(result)


def markdown_table(results: list[dict]) -> str:
    """Mean ± 95% CI half-width over seeds, one row per setting; NaNs (no completed episode) skipped.
    A setting with one measured seed shows its value as having no interval, never as "± 0"."""
    header = ["setting", "seeds", "parameters", *(h for h, _ in METRICS.values())]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for label, runs in by_setting(results).items():
        cells = [label, str(len(runs)), f"{runs[0]['parameters']:,}"]
        for column, (_, decimals) in METRICS.items():
            values = measured(runs, column)
            cells.append(format_mean_ci(*mean_ci(values), decimals))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def seed_differences(results: list[dict], column: str = "ratio_to_nearest_frontier") -> tuple[str, str]:
    """Every two settings' difference in ``column``, the later setting's mean over its seeds minus
    the earlier's, with Welch's 95% interval: each run is one replicate, so the interval counts
    training's seed-to-seed spread as well as the held-out maps'.

    Returns a Markdown table and a sentence: which intervals exclude 0, and the largest
    difference any interval allows (``|difference| + half-width``); empty when no interval could be
    formed (a setting with one seed).
    """
    header, decimals = METRICS[column]
    groups = {label: measured(runs, column) for label, runs in by_setting(results).items()}
    lines = [f"| new | base | {header}: new - base | seeds (new, base) |", "|---|---|---|---|"]
    bounds, differing = [], []
    for base, new in itertools.combinations(groups, 2):
        difference, half = welch_difference_ci(groups[new], groups[base])
        if math.isnan(half):
            cell = "n/a" if math.isnan(difference) else f"{difference:+.{decimals}f} (no interval: too few seeds)"
        else:
            cell = f"{difference:+.{decimals}f} ± {half:.{decimals}f}"
            bounds.append(abs(difference) + half)
            if abs(difference) > half:
                differing.append(f"{new} against {base}")
        lines.append(f"| {new} | {base} | {cell} | {len(groups[new])}, {len(groups[base])} |")
    table = "\n".join(lines) + "\n"
    if not bounds:
        return table, ""
    largest = f"{max(bounds):.{decimals}f}"
    if differing:
        return table, (f"Intervals that exclude 0 (a difference at 95%): {'; '.join(differing)}. The largest "
                       f"difference in {header} any interval allows is {largest}.")
    return table, (f"Every interval holds 0: no two settings differ in {header} by more than {largest} "
                   f"at 95% confidence.")
