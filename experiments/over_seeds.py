"""One configuration trained from several seeds: its table over seeds and its learning curves.

    python -m experiments.over_seeds --runs RUN_1 RUN_2 RUN_3 --reports R1.json R2.json R3.json
        --baselines BASELINES.json [--picture seeds.png]

Each ``--reports`` file is ``evaluate.py --json`` of the run beside it (``--policy agent``) and
``--baselines`` one of greedy and nearest frontier on the same maps (the same ``--seed``,
``--episodes`` and environment; refused otherwise). Prints, per seed, the agent's travel over
each baseline's, map by map with its 95% interval, and the mean over seeds with its 95%
interval over seeds (Student's t: 3 seeds give a wide one, as CleanRL's tables do); draws each
run's coverage, return and travel against env steps, each seed thin, the mean thick.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from env.episode import EpisodeResult
from evaluation.ablation_run import CURVES, scalar_series
from evaluation.play import AGENT, REFERENCES, travel_ratio
from evaluation.stats import format_mean_ci, mean_ci
from viz.ablation_plots import learning_curves

SAME_MAPS = ("seed", "episodes", "first_episode", "env")
"""What two reports must share to have played the same maps."""


def read_report(path: Path, policies: tuple[str, ...]) -> tuple[dict, dict[str, list[EpisodeResult]]]:
    """The report at ``path`` and its episodes of ``policies``; ``ValueError`` naming what is missing."""
    try:
        report = json.loads(path.read_text())
        episodes = {name: [EpisodeResult(**episode) for episode in report["per_episode"][name]] for name in policies}
    except (OSError, json.JSONDecodeError, KeyError, TypeError) as error:
        raise ValueError(f"{path}: not an evaluate.py --json report with {', '.join(policies)} ({error!r})") from None
    return report, episodes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=Path, nargs="+", required=True, help="the run folders, one per seed")
    parser.add_argument("--reports", type=Path, nargs="+", required=True, help="evaluate.py --json of each run, in order")
    parser.add_argument("--baselines", type=Path, required=True, help="evaluate.py --json of greedy and nearest frontier")
    parser.add_argument("--picture", type=Path, help="write the learning curves here (PNG)")
    args = parser.parse_args(argv)
    if len(args.runs) != len(args.reports):
        parser.error(f"--runs: {len(args.runs)} folders for {len(args.reports)} --reports; one report a run")
    try:
        base, baselines = read_report(args.baselines, REFERENCES)
        agents = []
        for path in args.reports:
            report, episodes = read_report(path, (AGENT,))
            differ = [key for key in SAME_MAPS if report.get(key) != base.get(key)]
            if differ:
                raise ValueError(f"{path}: played other maps than {args.baselines} ({', '.join(differ)} differ)")
            agents.append(episodes[AGENT])
    except ValueError as error:
        parser.exit(2, f"{parser.prog}: error: {error}\n")

    print(f"{len(agents)} seeds on {base['episodes']} maps (evaluate.py --seed {base['seed']}); "
          "travel / baseline, map by map, mean ± 95% CI")
    print("| run | success | " + " | ".join(f"travel / {name}" for name in REFERENCES) + " |\n"
          "| --- | --- | " + " | ".join("---" for _ in REFERENCES) + " |")
    per_seed = {name: [] for name in REFERENCES}
    for run, episodes in zip(args.runs, agents):
        cells = []
        for name in REFERENCES:
            mean, half, _ = travel_ratio(episodes, baselines[name])
            per_seed[name].append(mean)
            cells.append(format_mean_ci(mean, half, 3))
        success = sum(e.success for e in episodes) / len(episodes)
        print(f"| {run} | {success:.3f} | " + " | ".join(cells) + " |")
    over = [format_mean_ci(*mean_ci(per_seed[name]), 3) for name in REFERENCES]
    print(f"| mean over {len(agents)} seeds (95% CI over seeds) | | " + " | ".join(over) + " |")

    if args.picture is not None:
        runs = [{"curves": {name: scalar_series(run, tag)[tag] for name, tag in CURVES.items()}} for run in args.runs]
        total = max(max(r["curves"]["coverage"][0], default=0) for r in runs)
        learning_curves({f"{len(runs)} seeds": runs}, total, args.picture)
        print(f"learning curves: {args.picture}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
