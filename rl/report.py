"""Ablation results: one CSV row per run, and a Markdown table per setting with 95% CIs."""
from __future__ import annotations

import csv
from collections import defaultdict
from pathlib import Path

from stats import format_mean_ci, mean_ci

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
    """Mean ± 95% CI half-width over seeds, one row per setting; NaNs (no completed episode) skipped."""
    header = ["setting", "seeds", "parameters", *(h for h, _ in METRICS.values())]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for label, runs in by_setting(results).items():
        cells = [label, str(len(runs)), f"{runs[0]['parameters']:,}"]
        for column, (_, decimals) in METRICS.items():
            values = [r[column] for r in runs if r[column] == r[column]]  # drop NaN
            cells.append(format_mean_ci(*mean_ci(values), decimals))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
