"""Compare ``evaluate.py --json`` reports map by map.

    python compare.py NEW.json [NEW.json ...] BASE.json [--policy agent] [--reference greedy ...]
    python compare.py NEW.json [NEW.json ...] --base BASE.json [BASE.json ...] [--policy agent] [--reference agent]

Both reports must cover the same held-out maps: the same ``--seed`` and the same environment
settings (episode i's map depends on nothing else, so reports of different lengths are compared
over the episodes both ran); reports over a ``map_dir`` must also name the same map files in the
same order (the folder's files may have changed between them). Each policy of NEW is paired with
each policy of BASE, episode by episode, over the maps both completed. The table gives the mean
per-map travel ratio NEW / BASE (95% CI) and on how many of those maps NEW travelled less, more
or the same.

This is how a run evaluated alone (``evaluate.py --policy agent``) is set against the baselines
of an earlier full report, or two runs against each other, without running anything again.

Several NEW reports (runs of other seeds, say, each evaluated on the same maps) are pooled: a
policy's travel on a map is its mean over the reports, and a map counts as completed only when
every report completed it. The ratio then measures the training procedure's average agent, with
a CI over maps, instead of one run's. With ``--base``, BASE may be several reports too, pooled
the same way: two settings of a sweep, five seeds each, compared map by map
(``ablate.py`` keeps each run's report as ``evaluation.json``)::

    python compare.py runs/heads/model.n_heads=8_seed*/evaluation.json \
        --base runs/heads/model.n_heads=1_seed*/evaluation.json --policy agent --reference agent
"""
from __future__ import annotations

import openmp_wait  # noqa: F401  (first: how torch's threads wait; see the module)

import argparse
import json
import sys
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np

from rl.evaluation import EpisodeResult, completed_travel_pairs, travel_ratio
from stats import format_mean_ci

Episodes = dict[str, list[EpisodeResult]]
"""Policy name -> one result per held-out map, in episode order."""


@dataclass
class Report:
    """What of an ``evaluate.py --json`` report a comparison needs."""
    seed: int
    env: dict
    episodes: Episodes


def load_report(path: Path) -> Report:
    """The report at ``path``; ``ValueError`` when it is not an ``evaluate.py --json`` report."""
    try:
        report = json.loads(path.read_text())
        episodes = {name: [EpisodeResult(**e) for e in results] for name, results in report["per_episode"].items()}
        report = Report(seed=report["seed"], env=report["env"], episodes=episodes)
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


def common_maps(new: Report, base: Report) -> int:
    """How many leading episodes the two reports share; ``ValueError`` naming what differs when
    they were run on different maps."""
    if new.seed != base.seed:
        raise ValueError(f"the reports were run on different maps: --seed {new.seed} against --seed {base.seed}")
    if maps_of(new.env) != maps_of(base.env):
        differ = sorted(key for key in MAP_SETTINGS if new.env.get(key) != base.env.get(key))
        raise ValueError(f"the reports were run with different environment settings: {differ} "
                         f"({[new.env.get(k) for k in differ]} against {[base.env.get(k) for k in differ]})")
    n = min(len(results) for results in (*new.episodes.values(), *base.episodes.values()))
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
    return Report(seed=first.seed, env=first.env, episodes=episodes)


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


def pick(episodes: Episodes, names: list[str] | None, flag: str, source: str) -> Episodes:
    if not names:
        return episodes
    unknown = [name for name in names if name not in episodes]
    if unknown:
        raise ValueError(f"{flag}: {unknown} not in {source}; it has {sorted(episodes)}")
    return {name: episodes[name] for name in names}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reports", type=Path, nargs="+", metavar="REPORT",
                        help="NEW.json [NEW.json ...] BASE.json: evaluate.py --json reports; the policies of "
                             "NEW (pooled per map when several) are compared with those of BASE, the last")
    parser.add_argument("--base", type=Path, nargs="+", metavar="BASE",
                        help="BASE reports (pooled per map when several); every positional report is then NEW")
    parser.add_argument("--policy", nargs="+", help="policies of NEW to compare (default: all)")
    parser.add_argument("--reference", nargs="+", help="policies of BASE to compare with (default: all)")
    args = parser.parse_args(argv)
    if args.base:
        new_paths, base_paths = args.reports, args.base
    elif len(args.reports) < 2:
        parser.error(f"got one report ({args.reports[0]}): give NEW.json [NEW.json ...] BASE.json, or --base")
    else:
        new_paths, base_paths = args.reports[:-1], args.reports[-1:]
    every = [*new_paths, *base_paths]
    resolved = [path.resolve() for path in every]
    twice = sorted({str(p) for p in every if resolved.count(p.resolve()) > 1})
    if twice:
        parser.error(f"{twice} given more than once: a report compared with itself says nothing")
    try:
        new = pool_reports([load_report(path) for path in new_paths], new_paths)
        base = pool_reports([load_report(path) for path in base_paths], base_paths)
        n = common_maps(new, base)
        ours = pick(new.episodes, args.policy, "--policy", " ".join(map(str, new_paths)))
        references = pick(base.episodes, args.reference, "--reference", " ".join(map(str, base_paths)))
    except ValueError as error:
        parser.error(str(error))
    rows = {(name, reference): comparison_row(results[:n], reference_results[:n])
            for name, results in ours.items() for reference, reference_results in references.items()}
    print(f"{n} shared held-out maps (--seed {new.seed})")
    for side, paths in (("new", new_paths), ("base", base_paths)):
        if len(paths) > 1:
            print(f"{side}: each map's travel is the mean over {len(paths)} reports")
    print(format_comparison(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
