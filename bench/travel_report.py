"""What the lookahead benches print and keep: per-map travel ratios, and every episode for compare.py."""
from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from config import EnvConfig
from rl.atomic import atomic_write_text
from rl.evaluation import EpisodeResult, evaluation_report, travel_ratio
from stats import format_mean_ci


def report_travel(results: Mapping[str, Sequence[EpisodeResult]], pairs: Iterable[tuple[str, str]],
                  json_path: Path | None, episodes: int, seed: int, env_config: EnvConfig) -> None:
    """Print ``travel OURS / REFERENCE: mean ± CI (n=...)`` for each pair; with ``json_path``,
    write the episodes as ``evaluate.py --json`` does."""
    for ours, reference in pairs:
        mean, half, n = travel_ratio(results[ours], results[reference])
        print(f"travel {ours} / {reference}: {format_mean_ci(mean, half, 3)} (n={n})")
    if json_path:
        atomic_write_text(json_path, json.dumps(evaluation_report(results, episodes, seed, env_config), indent=2))
