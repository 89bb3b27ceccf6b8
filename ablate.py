"""Sweep any config keys (the number of heads first of all), several seeds each, and compare.

    python ablate.py --heads 1 2 4 8 --seeds 3 [--config configs/default.yaml] [key=value ...]
    python ablate.py --sweep model.n_layers=2,4,6 --sweep model.n_heads=2,8 --seeds 2

Each (setting, seed) is an ordinary training run in ``--out`` (default runs/ablation), evaluated
by its argmax moves, with nearest frontier, on the same held-out maps as ``evaluate.py``. Runs go in parallel
processes (``--workers``, default: one per core), and the sweep is resumable: rerun the same
command after a kill and finished runs are skipped, interrupted ones resumed from their last
checkpoint; a run folder made with other settings is refused, naming the keys that differ, and a
finished run evaluated with other ``--episodes`` / ``--eval-seed`` is evaluated again. Writes results.csv, results.md, learning_curves.png, travel_to_complete.png and
ratio_to_nearest_frontier.png.
"""
from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

from tqdm import tqdm

from config import ConfigError, load_config
from rl.report import by_setting, markdown_table, write_csv
from rl.sweep import RunSpec, StaleRunError, check_reusable, run_name, run_one, settings_grid, spec_config
from viz.ablation_plots import final_metric, learning_curves


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--heads", type=int, nargs="+", help="head counts to compare (model.n_heads)")
    parser.add_argument("--sweep", action="append", default=[], metavar="KEY=V1,V2", help="any config key")
    parser.add_argument("--seeds", type=int, default=3, help="seeds per setting (1, 2, ...)")
    parser.add_argument("--config", default="configs/default.yaml")
    parser.add_argument("--out", type=Path, default=Path("runs/ablation"))
    parser.add_argument("--episodes", type=int, default=50, help="held-out evaluation episodes per run")
    parser.add_argument("--eval-seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("overrides", nargs="*", help="key=value applied to every run")
    args = parser.parse_args(argv)
    try:
        sweeps = parse_sweeps(args.heads, args.sweep)
        grid = settings_grid(sweeps)
        for setting in grid:  # fail now, naming the key, rather than inside a worker
            config = load_config(args.config, [*args.overrides, *setting])
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.seeds < 1 or args.workers < 1:
        parser.error("--seeds and --workers must be >= 1")

    workers = min(args.workers, len(grid) * args.seeds)
    threads = max(1, (os.cpu_count() or 1) // workers)
    specs = [RunSpec(label=",".join(setting), overrides=(*args.overrides, *setting), seed=seed,
                     run_dir=str(args.out / run_name(setting, seed)), config_path=args.config,
                     episodes=args.episodes, eval_seed=args.eval_seed, torch_threads=threads)
             for setting in grid for seed in range(1, args.seeds + 1)]
    try:  # before any run starts: a folder made with other settings is never relabelled
        for spec in specs:
            check_reusable(Path(spec.run_dir), spec_config(spec))
    except StaleRunError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    results = []
    # spawn, not fork: each worker starts a clean torch with its own thread count.
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [pool.submit(run_one, spec) for spec in specs]
        for future in tqdm(as_completed(futures), total=len(futures), unit="run", desc=f"ablation ({workers} workers)"):
            results.append(future.result())

    write_csv(results, args.out / "results.csv")
    table = markdown_table(results)
    budget = f"{config.ppo.total_timesteps:,} env steps per run, {args.seeds} seeds, {args.episodes} held-out episodes"
    (args.out / "results.md").write_text(f"Budget: {budget}.\n\n{table}")
    groups = by_setting(results)
    learning_curves(groups, config.ppo.total_timesteps, args.out / "learning_curves.png")
    final_metric(groups, "travel_to_complete", "travel to complete (cells)", args.out / "travel_to_complete.png")
    final_metric(groups, "ratio_to_nearest_frontier", "travel / nearest frontier", args.out / "ratio_to_nearest_frontier.png")
    print(f"Budget: {budget}\n{table}\nwrote {args.out}/results.csv, results.md and plots")
    return 0


if __name__ == "__main__":
    sys.exit(main())
