"""Compare ``evaluate.py --json`` reports map by map.

    python compare.py NEW.json [NEW.json ...] BASE.json [--policy agent] [--reference greedy ...]
    python compare.py NEW.json [NEW.json ...] --base BASE.json [BASE.json ...] [--policy agent] [--reference agent]
    python compare.py PART.json [PART.json ...] --base PART.json [PART.json ...] --join

Both reports must cover the same held-out maps: the same ``--seed``, the same environment
settings and the same first episode (``evaluate.py --first-episode``; episode i's map
depends on nothing else, so reports of different lengths are compared over the episodes both ran);
reports over a ``map_dir`` must also name the same map files in the same order (the folder's files
may have changed between them). Each policy of NEW is paired with
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

With ``--join`` the reports on each side are instead parts of one run that cover consecutive maps
(a bench split into processes by ``--first-episode``, say): each side's are joined end to end, in
episode order, and must follow each other without a gap or overlap::

    python compare.py planner_0.json planner_50.json --base v17_0.json v17_50.json --join
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from evaluation.comparison import (
    Episodes,
    common_maps,
    comparison_row,
    format_comparison,
    join_reports,
    load_report,
    pool_reports,
)


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
    parser.add_argument("--join", action="store_true",
                        help="the reports on each side are parts of one run (experiments.predicted_lookahead "
                             "--first-episode): joined end to end, not pooled")
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
        combine = join_reports if args.join else pool_reports
        new = combine([load_report(path) for path in new_paths], new_paths)
        base = combine([load_report(path) for path in base_paths], base_paths)
        n = common_maps(new, base)
        ours = pick(new.episodes, args.policy, "--policy", " ".join(map(str, new_paths)))
        references = pick(base.episodes, args.reference, "--reference", " ".join(map(str, base_paths)))
    except ValueError as error:
        parser.error(str(error))
    rows = {(name, reference): comparison_row(results[:n], reference_results[:n])
            for name, results in ours.items() for reference, reference_results in references.items()}
    print(f"{n} shared held-out maps (--seed {new.seed})")
    for side, paths in (("new", new_paths), ("base", base_paths)):
        if len(paths) > 1 and args.join:
            print(f"{side}: {len(paths)} reports joined, maps {new.first_episode}-{new.first_episode + n - 1}")
        elif len(paths) > 1:
            print(f"{side}: each map's travel is the mean over {len(paths)} reports")
    print(format_comparison(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
