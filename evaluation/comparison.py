"""Evaluation reports (``evaluate.py --json``) read, checked for sharing maps, pooled and paired map by map.

The library behind ``compare.py`` and ``ablate.py``'s paired comparison of settings.
"""
from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field, fields
from pathlib import Path

import numpy as np

from env.episode import EpisodeResult
from evaluation.play import completed_travel_pairs, played_maps, travel_ratio
from evaluation.stats import format_mean_ci

Episodes = dict[str, list[EpisodeResult]]
"""Policy name -> one result per held-out map, in episode order."""


@dataclass
class Report:
    """What of an ``evaluate.py --json`` report a comparison needs."""
    seed: int
    env: dict
    episodes: Episodes
    first_episode: int = 0
    """The held-out episode of the first map (``experiments.predicted_lookahead --first-episode``; 0
    for ``evaluate.py`` and for reports written before it was recorded)."""
    header: dict = field(default_factory=dict)
    """The report file's other top-level fields, as written (``evaluate.py``'s ``checkpoint`` and
    ``planner``, say); empty for a pooled or joined report."""


def load_report(path: Path) -> Report:
    """The report at ``path``; ``ValueError`` when it is not an ``evaluate.py --json`` report."""
    try:
        report = json.loads(path.read_text())
        episodes = {name: [EpisodeResult(**e) for e in results] for name, results in report["per_episode"].items()}
        report = Report(seed=report["seed"], env=report["env"], episodes=episodes,
                        first_episode=report.get("first_episode", 0),
                        header={key: value for key, value in report.items() if key != "per_episode"})
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError, AttributeError) as error:
        reason = "an empty file" if path.is_file() and path.stat().st_size == 0 else type(error).__name__
        raise ValueError(f"{path}: not an evaluate.py --json report ({reason})") from None
    if not report.episodes or not all(report.episodes.values()):
        raise ValueError(f"{path}: the report holds no episodes")
    return report


MAP_SETTINGS = ("id", "kwargs")
"""The environment settings that shape the maps; ``num_envs`` and ``vector`` do not."""


def maps_of(env: dict) -> dict:
    return {key: env.get(key) for key in MAP_SETTINGS}


def check_same_series(new: Report, base: Report) -> None:
    """``ValueError`` naming what differs when the two reports' held-out maps are not of one
    series: another ``--seed`` or other environment settings."""
    if new.seed != base.seed:
        raise ValueError(f"the reports were run on different maps: --seed {new.seed} against --seed {base.seed}")
    if maps_of(new.env) != maps_of(base.env):
        differ = sorted(key for key in MAP_SETTINGS if new.env.get(key) != base.env.get(key))
        raise ValueError(f"the reports were run with different environment settings: {differ} "
                         f"({[new.env.get(k) for k in differ]} against {[base.env.get(k) for k in differ]})")


def common_maps(new: Report, base: Report) -> int:
    """How many leading episodes the two reports share; ``ValueError`` naming what differs when
    they were run on different maps."""
    check_same_series(new, base)
    if new.first_episode != base.first_episode:  # procedural maps name no file that would tell
        raise ValueError(f"the reports start at different held-out episodes, {new.first_episode} against "
                         f"{base.first_episode}: not the same maps")
    n = min(played_maps(new.episodes), played_maps(base.episodes))
    new_maps, base_maps = ([(e.map_family, e.map_file) for e in next(iter(r.episodes.values()))[:n]]
                           for r in (new, base))
    for i, ((new_family, new_file), (base_family, base_file)) in enumerate(zip(new_maps, base_maps)):
        if new_family != base_family:
            raise ValueError(f"episode {i} is a {new_family} map in one report and a {base_family} map in "
                             f"the other: not the same maps")
        if None not in (new_file, base_file) and new_file != base_file:  # None: procedural, or an older report
            raise ValueError(f"episode {i} plays map file {new_file!r} in one report and {base_file!r} in "
                             f"the other: not the same maps")
    return n


def pool_reports(reports: list[Report], paths: list[Path]) -> Report:
    """One report whose policies are those every report has, each map's result the mean over the
    reports (success only when all succeeded); ``ValueError`` when they were run on other maps or
    share no policy."""
    if len(reports) == 1:
        return reports[0]
    first, rest = reports[0], reports[1:]
    n = min(common_maps(first, other) for other in rest)
    shared = [name for name in first.episodes if all(name in other.episodes for other in rest)]
    if not shared:
        raise ValueError(f"{[str(p) for p in paths]} share no policy: they have "
                         f"{[sorted(r.episodes) for r in reports]}")
    numeric = [f.name for f in fields(EpisodeResult) if f.name not in ("success", "map_family", "map_file")]

    def pooled(results: list[EpisodeResult]) -> EpisodeResult:
        means = {name: float(np.mean([getattr(r, name) for r in results])) for name in numeric}
        return EpisodeResult(success=all(r.success for r in results), map_family=results[0].map_family,
                             map_file=next((r.map_file for r in results if r.map_file is not None), None), **means)

    episodes = {name: [pooled(list(per_map)) for per_map in zip(*(r.episodes[name][:n] for r in reports))]
                for name in shared}
    return Report(seed=first.seed, env=first.env, episodes=episodes, first_episode=first.first_episode)


def join_reports(reports: list[Report], paths: list[Path]) -> Report:
    """One report of the maps ``reports`` cover end to end, in episode order: the parts of one
    run split by first episode (``experiments.predicted_lookahead --first-episode``). ``ValueError``
    when they are of other series or policies, or leave a gap or overlap between them."""
    parts = sorted(zip(reports, paths), key=lambda part: part[0].first_episode)
    (first, first_path), episodes = parts[0], {name: [] for name in parts[0][0].episodes}
    end = first.first_episode
    for report, path in parts:
        check_same_series(first, report)
        if list(report.episodes) != list(episodes):
            raise ValueError(f"{path} has the policies {list(report.episodes)}, {first_path} {list(episodes)}: "
                             f"parts of one run have the same")
        if report.first_episode != end:
            raise ValueError(f"{path} starts at held-out episode {report.first_episode} where the parts before it "
                             f"end at {end}: joined parts must follow each other without a gap or overlap")
        for name, results in report.episodes.items():
            episodes[name] += results[:played_maps(report.episodes)]
        end += played_maps(report.episodes)
    return Report(seed=first.seed, env=first.env, episodes=episodes, first_episode=first.first_episode)


def comparison_row(ours: list[EpisodeResult], reference: list[EpisodeResult]) -> dict:
    """The per-map travel ratio ours / reference (mean, 95% CI half-width, maps) and the counts
    of maps on which ours travelled less, more, the same."""
    pairs = completed_travel_pairs(ours, reference)
    mean, half, n = travel_ratio(ours, reference)
    return {"ratio": mean, "half": half, "maps": n, "shorter": sum(a < b for a, b in pairs),
            "longer": sum(a > b for a, b in pairs), "equal": sum(a == b for a, b in pairs)}


def format_comparison(rows: dict[tuple[str, str], dict]) -> str:
    """A Markdown table, one row per (NEW policy, BASE policy) pair."""
    lines = ["| new | base | travel new / base | shorter | longer | equal | maps |", "|---|---|---|---|---|---|---|"]
    for (ours, reference), row in rows.items():
        ratio = "n/a" if row["maps"] == 0 else format_mean_ci(row["ratio"], row["half"], 3)
        lines.append(f"| {ours} | {reference} | {ratio} | {row['shorter']} | {row['longer']} | {row['equal']} "
                     f"| {row['maps']} |")
    lines.append("(per-map ratio, mean ± 95% CI half-width, Student's t, over the maps both completed)")
    return "\n".join(lines)


def paired_settings(reports: dict[str, list[Path]], policy: str = "agent") -> str:
    """``format_comparison`` of ``policy`` between every two settings, the later in ``reports``'
    order over the earlier, each setting's per-map travel pooled over its reports (its seeds)."""
    pooled = {label: pool_reports([load_report(path) for path in paths], paths) for label, paths in reports.items()}
    rows = {}
    for base, new in itertools.combinations(pooled, 2):
        n = common_maps(pooled[new], pooled[base])
        rows[(new, base)] = comparison_row(pooled[new].episodes[policy][:n], pooled[base].episodes[policy][:n])
    return format_comparison(rows)
