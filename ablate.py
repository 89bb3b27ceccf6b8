"""Sweep any config keys (the number of heads first of all), several seeds each, and compare.

    python ablate.py --heads 1 2 4 8 --seeds 3 [--config configs/default.yaml] [key=value ...]
    python ablate.py --sweep model.n_layers=2,4,6 --sweep model.n_heads=2,8 --seeds 2

Each (setting, seed) is an ordinary training run in ``--out`` (default runs/ablation), evaluated
by its argmax moves, with nearest frontier, on the same held-out maps as ``evaluate.py``. Each run
is a Ray task reserving ``--cpus-per-run`` CPUs (and ``--gpus-per-run`` GPUs), on a local Ray or
across the cluster ``--address`` names; a run whose process dies is retried from its checkpoint.
The sweep is resumable: stop it with Ctrl-C or ``kill PID`` (SIGTERM, for one started in the
background), rerun the same command, and finished runs are skipped,
interrupted ones resumed from their last checkpoint; a run folder made with other settings is
refused, naming the keys that differ, and a finished run evaluated with other ``--episodes`` /
``--eval-seed`` is evaluated again. Each run keeps its episodes in ``evaluation.json``. Writes
results.csv, results.md (mean ± 95% CI over seeds per setting; every two settings' difference over
seeds, Welch's t, with the largest difference the intervals allow: ``evaluation.ablation_report.seed_differences``;
then every two settings compared map by map, seeds pooled: ``evaluation.comparison.paired_settings``),
learning_curves.png, travel_to_complete.png and ratio_to_nearest_frontier.png; ``--report``
writes them from the runs finished so far and starts nothing, to look at a long sweep while it
runs.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from config import ConfigError, load_config
from evaluation.ablation_report import by_setting, markdown_table, seed_differences, write_csv
from evaluation.ablation_run import (
    EVALUATION,
    RESULT,
    RunSpec,
    StaleRunError,
    check_reusable,
    finished_result,
    run_name,
    settings_grid,
    spec_config,
)
from evaluation.comparison import paired_settings
from learning.envs import check_env_config

OVER_SEEDS = ("Over seeds: each setting's travel / nearest frontier against another's, each run one replicate "
              "(Welch's t), so training's seed-to-seed spread counts: the question whether the setting matters.")
PAIRED = ("Paired per map: the agent's travel under one setting over another's on each held-out map, each "
          "setting's travel on a map the mean over its seeds (compare.py --base).")


def parse_sweeps(heads: list[int] | None, sweeps: list[str]) -> dict[str, list[str]]:
    """``--heads`` and ``--sweep key=v1,v2`` as {key: [values]}; each key checked against the schema."""
    result: dict[str, list[str]] = {}
    if heads:
        result["model.n_heads"] = [str(h) for h in heads]
    for sweep in sweeps:
        key, sep, values = sweep.partition("=")
        if not sep or not values:
            raise ConfigError(f"--sweep {sweep!r} must look like key=v1,v2 (e.g. model.n_layers=2,4)")
        result[key.strip()] = [v.strip() for v in values.split(",")]
    if not result:
        raise ConfigError("nothing to sweep: give --heads and/or --sweep key=v1,v2")
    return result


def run_all(specs: list[RunSpec], args: argparse.Namespace) -> tuple[list[dict], int | None]:
    """Every run of ``specs`` as a Ray task -> (results, None), or ([], the exit code) once stderr says why."""
    args.out.mkdir(parents=True, exist_ok=True)
    from cluster.connect import ray_session  # Ray is imported only here
    from cluster.sweep import run_sweep
    try:
        with ray_session(args.address):  # where SIGTERM is a KeyboardInterrupt too
            results, failures = run_sweep(specs, args.cpus_per_run, args.gpus_per_run, args.retries)
    except ConfigError as error:  # no cluster at --address
        print(f"error: {error}", file=sys.stderr)
        return [], 2
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: each running run saved first (run_sweep)
        print("interrupted: finished runs are kept and the others resume from their last checkpoint; "
              "rerun the same command to continue the sweep", file=sys.stderr)
        return [], 130
    if failures:
        print(f"{len(failures)} of {len(specs)} runs failed (rerun the same command to retry them; finished "
              f"runs are kept):\n" + "\n".join(failures), file=sys.stderr)
        return [], 1
    return results, None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--heads", type=int, nargs="+", help="head counts to compare (model.n_heads)")
    parser.add_argument("--sweep", action="append", default=[], metavar="KEY=V1,V2", help="any config key")
    parser.add_argument("--seeds", type=int, default=3, help="seeds per setting (1, 2, ...)")
    parser.add_argument("--config", default="configs/default.yaml")
    parser.add_argument("--out", type=Path, default=Path("runs/ablation"))
    parser.add_argument("--episodes", type=int, default=50, help="held-out evaluation episodes per run")
    parser.add_argument("--eval-seed", type=int, default=0)
    parser.add_argument("--cpus-per-run", type=int, default=1, help="CPUs each run reserves, its torch threads")
    parser.add_argument("--gpus-per-run", type=float, default=0.0, help="GPUs each run reserves (e.g. 0.5)")
    parser.add_argument("--address", default="", help="the Ray cluster to run on (default: a local one)")
    parser.add_argument("--retries", type=int, default=2, help="times a run whose process died is retried")
    parser.add_argument("--report", action="store_true",
                        help="write the results of the runs finished so far and start nothing (a long sweep's progress)")
    parser.add_argument("overrides", nargs="*", help="key=value applied to every run")
    args = parser.parse_args(argv)
    try:
        sweeps = parse_sweeps(args.heads, args.sweep)
        grid = settings_grid(sweeps)
        for setting in grid:  # fail now, naming the key, rather than inside a worker
            config = load_config(args.config, [*args.overrides, *setting])
            check_env_config(config.env)
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    for option, value, low in (("--seeds", args.seeds, 1), ("--episodes", args.episodes, 1),
                               ("--cpus-per-run", args.cpus_per_run, 1), ("--gpus-per-run", args.gpus_per_run, 0),
                               ("--retries", args.retries, 0), ("--eval-seed", args.eval_seed, 0)):
        if value < low:
            parser.error(f"{option} must be >= {low}, got {value}")

    out = args.out.resolve()  # the runs may execute in another working directory, or on another node
    specs = [RunSpec(label=",".join(setting), overrides=(*args.overrides, *setting), seed=seed,
                     run_dir=str(out / run_name(setting, seed)), config_path=str(Path(args.config).resolve()),
                     episodes=args.episodes, eval_seed=args.eval_seed, torch_threads=args.cpus_per_run)
             for setting in grid for seed in range(1, args.seeds + 1)]
    try:  # before any run starts: a folder made with other settings is never relabelled
        for spec in specs:
            check_reusable(Path(spec.run_dir), spec_config(spec))
    except StaleRunError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.report:
        results = [result for result in map(finished_result, specs) if result is not None]
        if not results:
            print(f"error: none of the {len(specs)} runs in {args.out} has finished yet", file=sys.stderr)
            return 1
    else:
        results, code = run_all(specs, args)
        if code is not None:
            return code

    write_csv(results, args.out / "results.csv")
    groups = by_setting(results)
    table = markdown_table(results)
    differences, answer = seed_differences(results)
    try:
        paired = paired_settings({label: [Path(run["run_dir"]) / EVALUATION for run in runs]
                                  for label, runs in groups.items()})
    except ValueError as error:  # a run finished before runs kept their episodes
        paired = f"(not available: {error}; delete that run's {RESULT} to evaluate it again)"
    budget = f"{config.ppo.total_timesteps:,} env steps per run, {args.seeds} seeds, {args.episodes} held-out episodes"
    if len(results) < len(specs):
        budget += f"; {len(results)} of the {len(specs)} runs finished so far"
    answer = f"{answer}\n\n" if answer else "\n"
    report = f"Budget: {budget}.\n\n{table}\n{OVER_SEEDS}\n\n{differences}\n{answer}{PAIRED}\n\n{paired}\n"
    (args.out / "results.md").write_text(report)
    from viz.ablation_plots import final_metric, learning_curves  # matplotlib, 0.9 s: only once there is a plot to draw
    learning_curves(groups, config.ppo.total_timesteps, args.out / "learning_curves.png")
    final_metric(groups, "travel_to_complete", "travel to complete (cells)", args.out / "travel_to_complete.png")
    final_metric(groups, "ratio_to_nearest_frontier", "travel / nearest frontier", args.out / "ratio_to_nearest_frontier.png")
    print(f"{report}wrote {args.out}/results.csv, results.md and plots")
    return 0


if __name__ == "__main__":
    sys.exit(main())
