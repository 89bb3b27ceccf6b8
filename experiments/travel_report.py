"""What the lookahead benches print and keep: per-map travel ratios, and every episode for compare.py."""
from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from config import EnvConfig
from env.episode import EpisodeResult
from evaluation.play import finished_report, travel_ratio
from evaluation.stats import format_mean_ci
from run.atomic import atomic_write_text
from run.interrupt import StopOnSignal


def report_travel(results: Mapping[str, Sequence[EpisodeResult]], pairs: Iterable[tuple[str, str]],
                  json_path: Path | None, episodes: int, seed: int, env_config: EnvConfig, stop: StopOnSignal,
                  first_episode: int = 0) -> int:
    """Print ``travel OURS / REFERENCE: mean ± CI (n=...)`` for each pair over the maps every
    policy finished of the ``episodes`` asked from ``first_episode`` on (fewer when ``stop`` ended
    the run: it says so); with
    ``json_path``, write them as ``evaluate.py --json`` does. The program's exit code
    (``evaluation.play.finished_report``)."""
    report, exit_code = finished_report(results, stop, episodes, seed, env_config, first_episode)
    if report is None:
        return exit_code
    for ours, reference in pairs:
        mean, half, n = travel_ratio(results[ours], results[reference])
        print(f"travel {ours} / {reference}: {format_mean_ci(mean, half, 3)} (n={n})")
    if json_path:
        atomic_write_text(json_path, json.dumps(report, indent=2))
    return exit_code
