"""Sweep runs as Ray tasks: each (setting, seed) with its own CPU (or GPU) reservation, anywhere in the cluster.

A task is ``rl.sweep.run_one``: it trains (resuming from the run's last checkpoint if there is
one), evaluates and returns its result, which travels back to the driver, so ``results.csv`` and
the plots are written where ``ablate.py`` runs, wherever the runs ran. A task whose process dies
(a killed worker, a lost node) is retried by Ray (``max_retries``) and resumes from its checkpoint,
which must then be on a filesystem the retrying node sees (one machine, or a shared folder).
A run that fails with an error is not retried: its error is reported with its folder.
"""
from __future__ import annotations

import sys

import ray
from ray.exceptions import RayError, RayTaskError
from tqdm import tqdm

from rl.cluster.connect import cluster_cpus, completion_order
from rl.sweep import RunSpec, run_one


STOP_TIMEOUT_S = 300.0
"""How long a stopped sweep waits for its runs to save (an update takes seconds to a minute)."""


def run_here(spec: RunSpec) -> dict:
    """``run_one``, with the Ray node it ran on added to the result."""
    return {**run_one(spec), "node": ray.get_runtime_context().get_node_id()}


def run_sweep(specs: list[RunSpec], cpus_per_run: int, gpus_per_run: float, retries: int
              ) -> tuple[list[dict], list[str]]:
    """Every run of ``specs`` as a Ray task (connect first) -> (results in ``specs`` order, one line
    per run that failed)."""
    task = ray.remote(run_here).options(num_cpus=cpus_per_run, num_gpus=gpus_per_run, max_retries=retries,
                                        retry_exceptions=False)
    refs = [task.remote(spec) for spec in specs]
    results: dict[int, dict] = {}
    failures = []
    with tqdm(total=len(refs), unit="run", desc=f"sweep ({cluster_cpus()} CPUs)") as bar:
        try:
            for i in completion_order(refs):
                try:
                    results[i] = ray.get(refs[i])
                except RayTaskError as error:  # the run raised: report its own error, not Ray's wrapping
                    failures.append(f"{specs[i].run_dir}: {type(error.cause).__name__}: {error.cause}")
                except RayError as error:  # its process died more often than retries allow
                    failures.append(f"{specs[i].run_dir}: {type(error).__name__}: {error}")
                bar.update(1)
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
