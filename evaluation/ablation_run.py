"""One ablation run: train (or resume, or skip when finished), evaluate, and save a result file.

Each run lives in ``<out>/<label>_seed<S>/`` as an ordinary training run folder plus
``result.json``, written last and atomically: its presence is what marks a run as finished.
A run folder is reused only for the settings it was made with: its ``config.yaml`` must equal the
config the sweep asks for (``StaleRunError`` names the keys that differ), except for how fast it
runs, where it lives and what it keeps on disk (``NOT_SHAPING_A_RUN``: a moved sweep folder
resumes and reports from where it is now). A result evaluated with other ``--episodes`` /
``--eval-seed``, or recorded before one of today's ``CURVES`` was kept, is evaluated again from
the finished run.
"""
from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from config import Config, flat_settings, load_config, load_run_config
from env.baselines import BASELINES
from evaluation.play import AGENT, REFERENCES, evaluate_actors, evaluation_report
from graph_batch import argmax_actor
from learning import tags
from learning.trainer import Trainer
from run.atomic import atomic_write_text
from run.checkpoint import latest_checkpoint

RESULT = "result.json"
EVALUATION = "evaluation.json"
"""Every held-out episode of the agent and the baselines, as ``evaluate.py --json`` writes it."""

CURVES = {"return": tags.EPISODIC_RETURN, "coverage": tags.COVERAGE, "travel": tags.TRAVEL_DISTANCE}
"""The learning curves a result keeps (name -> the run's tensorboard tag), for the sweep's plots."""

NOT_SHAPING_A_RUN = ("run.torch_threads", "run.device", "run.run_dir", "run.keep_checkpoints", "env.vector",
                     "env.workers")
"""Settings a rerun may change without making a finished run stale: they decide how fast (torch's
threads change only the order of float sums), where (a sweep folder moved to
another disk), what is kept on disk or which collector gathers the rollouts (every collector
gathers the same, bit for bit), not what is learned."""


class StaleRunError(ValueError):
    """A run folder made with other settings than the sweep now asks for."""


class RunStoppedError(RuntimeError):
    """A run's training was stopped by a signal before its budget: checkpointed, not evaluated."""


@dataclass(frozen=True)
class RunSpec:
    label: str
    """The setting, e.g. ``model.n_heads=4`` (several joined by commas)."""
    overrides: tuple[str, ...]
    seed: int
    run_dir: str
    config_path: str
    episodes: int
    eval_seed: int
    torch_threads: int


def settings_grid(sweeps: dict[str, list[str]]) -> list[tuple[str, ...]]:
    """Every combination of the swept values, as override tuples (``key=value``)."""
    keys = list(sweeps)
    return [tuple(f"{k}={v}" for k, v in zip(keys, values)) for values in itertools.product(*sweeps.values())]


def run_name(overrides: tuple[str, ...], seed: int) -> str:
    """A folder name for a setting and seed: ``model.n_heads=4_seed1`` with unsafe characters replaced."""
    return re.sub(r"[^A-Za-z0-9._=,-]", "_", ",".join(overrides)) + f"_seed{seed}"


def scalar_series(run_dir: Path, *tags: str) -> dict[str, tuple[list[int], list[float]]]:
    """(steps, values) of each scalar ``tag`` in the run's events (empty lists for a missing tag)."""
    events = EventAccumulator(str(run_dir), size_guidance={"scalars": 0})
    events.Reload()
    present = set(events.Tags()["scalars"])
    series = {}
    for tag in tags:
        points = events.Scalars(tag) if tag in present else []
        series[tag] = ([p.step for p in points], [p.value for p in points])
    return series


def spec_config(spec: RunSpec) -> Config:
    """The resolved config of the run ``spec`` asks for: as many torch threads and rollout workers
    (``env.workers``, unless the sweep sets them) as the run has CPUs."""
    return load_config(spec.config_path, [f"env.workers={spec.torch_threads}", *spec.overrides, f"seed={spec.seed}",
                                          f"run.run_dir={spec.run_dir}", "run.image_every=0",
                                          f"run.torch_threads={spec.torch_threads}"])


def check_reusable(run_dir: Path, asked: Config) -> None:
    """Raise ``StaleRunError`` if ``run_dir`` holds a run made with other settings than ``asked``."""
    if not (run_dir / "config.yaml").exists():
        return
    found, wanted = flat_settings(load_run_config(run_dir / "config.yaml")), flat_settings(asked)
    differ = [key for key in wanted if key not in NOT_SHAPING_A_RUN and found.get(key) != wanted[key]]
    if differ:
        described = ", ".join(f"{key}: {found.get(key)!r} there, {wanted[key]!r} asked" for key in differ)
        raise StaleRunError(f"{run_dir} holds a run made with other settings than this sweep asks for "
                            f"({described}); give another --out, or delete the folder to retrain it")


def _evaluation(spec: RunSpec) -> dict:
    """How ``spec`` asks its run to be evaluated, as its result records it."""
    return {"episodes": spec.episodes, "eval_seed": spec.eval_seed}


def finished_result(spec: RunSpec) -> dict | None:
    """The run's recorded result if it finished, was evaluated as ``spec`` asks and keeps every one
    of ``CURVES``, else None."""
    path = Path(spec.run_dir) / RESULT
    if not path.exists():
        return None
    result = json.loads(path.read_text())
    current = result.get("evaluation") == _evaluation(spec) and set(CURVES) <= set(result.get("curves", {}))
    return {**result, "run_dir": spec.run_dir} if current else None  # where it is now, if the sweep moved


def run_one(spec: RunSpec) -> dict:
    """Train, evaluate and record one run; a finished run is read back, a killed one resumed.

    Raises ``StaleRunError`` before touching a run folder made with other settings, and
    ``RunStoppedError`` when a signal stops the training early (its checkpoint is kept; nothing is
    evaluated or recorded, so a rerun resumes it instead of reading back an unfinished agent).
    """
    run_dir, config = Path(spec.run_dir), spec_config(spec)
    check_reusable(run_dir, config)
    result = finished_result(spec)
    if result is not None:
        return result
    if latest_checkpoint(run_dir) is not None:
        trainer = Trainer.resume(run_dir)  # a finished run: train() below does nothing
    else:
        trainer = Trainer.create(config, run_dir)
    stopped = trainer.train(progress=False)
    if stopped is not None:
        raise RunStoppedError(f"{stopped.describe()} (of {trainer.config.num_updates}); the next sweep "
                              f"{'resumes it' if stopped.checkpoint else 'starts it again'}")

    actors = {AGENT: argmax_actor(trainer.policy.eval()), **{name: BASELINES[name] for name in REFERENCES}}
    episodes = evaluate_actors(actors, trainer.config.env, spec.episodes, spec.eval_seed, progress=False)
    report = evaluation_report(episodes, spec.episodes, spec.eval_seed, trainer.config.env)
    atomic_write_text(run_dir / EVALUATION, json.dumps(report))  # per map, for compare.py's paired comparison
    agent = report["summaries"][AGENT]
    series = scalar_series(run_dir, *CURVES.values(), tags.SPS)
    _, returns = series[CURVES["return"]]
    _, sps = series[tags.SPS]
    result = {
        "label": spec.label, "seed": spec.seed, "run_dir": str(run_dir), "evaluation": _evaluation(spec),
        "parameters": sum(p.numel() for p in trainer.policy.parameters()),
        "success_rate": agent["success_rate"][0], "coverage": agent["coverage"][0],
        "travel_to_complete": agent["travel_to_complete"][0],
        "ratio_to_nearest_frontier": report["travel_ratio_to_nearest_frontier"][AGENT][0],
        "ratio_to_greedy": report["travel_ratio_to_greedy"][AGENT][0],
        "final_return": float(np.mean(returns[-20:])) if returns else float("nan"),
        "sps": sps[-1] if sps else float("nan"),
        # charts/SPS averages since the run (re)started: after a resume, the minutes are an estimate
        "train_minutes": trainer.global_step / sps[-1] / 60 if sps else float("nan"),
        "curves": {name: list(series[tag]) for name, tag in CURVES.items()},
    }
    atomic_write_text(run_dir / RESULT, json.dumps(result))
    return result
