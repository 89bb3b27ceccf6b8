"""Sweep runs as Ray tasks: each (setting, seed) with its own CPU (or GPU) reservation, anywhere in the cluster.

A task is ``evaluation.ablation_run.run_one``: it trains (resuming from the run's last checkpoint if there is
one), evaluates and returns its result, which travels back to the driver, so ``results.csv`` and
the plots are written where ``ablate.py`` runs, wherever the runs ran. A task whose process dies
(a killed worker, a lost node) is retried by Ray (``max_retries``) and resumes from its checkpoint,
which must then be on a filesystem the retrying node sees (one machine, or a shared folder).
A run that fails with an error is not retried: its error is reported with its folder.

Progress is shown in updates over every run, as the run folders' checkpoints show them (read every
``PROGRESS_EVERY_S``), so the time left is right however many runs a resumed sweep had finished.
"""
from __future__ import annotations

import sys
from pathlib import Path

import ray
from ray.exceptions import RayError, RayTaskError
from tqdm import tqdm

from cluster.connect import cluster_cpus, completion_order
from evaluation.ablation_run import RunSpec, run_one, spec_config
from run.checkpoint import checkpoint_update, latest_checkpoint

STOP_TIMEOUT_S = 300.0
"""How long a stopped sweep waits for its runs to save (an update takes seconds to a minute)."""


PROGRESS_EVERY_S = 10.0
"""How often the sweep's bar reads the run folders while no run finishes."""


def updates_behind(spec: RunSpec, total: int) -> int:
    """How many of the run's ``total`` updates its latest checkpoint holds (0 before the first)."""
    latest = latest_checkpoint(Path(spec.run_dir))
    return 0 if latest is None else min(total, checkpoint_update(latest))


def run_here(spec: RunSpec) -> dict:
    """``run_one``, with the Ray node it ran on added to the result."""
    return {**run_one(spec), "node": ray.get_runtime_context().get_node_id()}


def run_sweep(specs: list[RunSpec], cpus_per_run: int, gpus_per_run: float, retries: int
              ) -> tuple[list[dict], list[str]]:
    """Every run of ``specs`` as a Ray task (connect first) -> (results in ``specs`` order, one line
    per run that failed)."""
    task = ray.remote(run_here).options(num_cpus=cpus_per_run, num_gpus=gpus_per_run, max_retries=retries,
                                        retry_exceptions=False)
    totals = [spec_config(spec).num_updates for spec in specs]
    ended: set[int] = set()  # runs whose task returned or failed

    def updates_done() -> int:
        return sum(total if i in ended else updates_behind(spec, total)
                   for i, (spec, total) in enumerate(zip(specs, totals)))

    refs = [task.remote(spec) for spec in specs]
    results: dict[int, dict] = {}
    failures = []
    # ``initial``: updates done before this sweep started count neither as progress nor for the rate.
    with tqdm(total=sum(totals), initial=updates_done(), unit="update", desc=f"sweep ({cluster_cpus()} CPUs)",
              postfix=f"0 of {len(specs)} runs ended") as bar:

        def show() -> None:
            bar.set_postfix_str(f"{len(ended)} of {len(specs)} runs ended", refresh=False)
            bar.update(updates_done() - bar.n)

        try:
            for i in completion_order(refs, tick=show, every_s=PROGRESS_EVERY_S):
                try:
                    results[i] = ray.get(refs[i])
                except RayTaskError as error:  # the run raised: report its own error, not Ray's wrapping
                    failures.append(f"{specs[i].run_dir}: {type(error.cause).__name__}: {error.cause}")
                except RayError as error:  # its process died more often than retries allow
                    failures.append(f"{specs[i].run_dir}: {type(error).__name__}: {error}")
                ended.add(i)
                show()
        except KeyboardInterrupt:
            stop_and_save(refs)
            raise
    return [results[i] for i in sorted(results)], failures


def stop_and_save(refs: list[ray.ObjectRef], timeout_s: float = STOP_TIMEOUT_S) -> None:
    """Stop every run: one not started never starts; one training finishes its update and saves a
    checkpoint before its task ends (``ray.cancel`` raises SIGINT's handler in the task, which is
    the trainer's ``StopOnSignal``), so the next sweep resumes it with nothing lost. Waits up to
    ``timeout_s`` for them; a second Ctrl-C stops at once (from the last checkpoints)."""
    print("stopping: each run finishes its update and saves a checkpoint (Ctrl-C again to stop at once)",
          file=sys.stderr, flush=True)
    for ref in refs:
        ray.cancel(ref)
    ray.wait(refs, num_returns=len(refs), timeout=timeout_s)
