"""One ablation run: train (or resume, or skip when finished), evaluate, and save a result file.

Each run lives in ``<out>/<label>_seed<S>/`` as an ordinary training run folder plus
``result.json``, written last and atomically: its presence is what marks a run as finished.
"""
from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from config import load_config
from env.baselines import BASELINES
from rl.atomic import atomic_write_text
from rl.checkpoint import latest_checkpoint
from rl.evaluation import evaluate_actors, argmax_actor, summarise, travel_ratio
from rl.trainer import Trainer

RESULT = "result.json"


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


def run_one(spec: RunSpec) -> dict:
    """Train, evaluate and record one run; a finished run is read back, a killed one resumed."""
    run_dir = Path(spec.run_dir)
    if (run_dir / RESULT).exists():
        return json.loads((run_dir / RESULT).read_text())
    if latest_checkpoint(run_dir) is not None:
        trainer = Trainer.resume(run_dir)
    else:
        overrides = [*spec.overrides, f"seed={spec.seed}", f"run.run_dir={run_dir}", "run.image_every=0",
                     f"run.torch_threads={spec.torch_threads}"]
        trainer = Trainer.create(load_config(spec.config_path, overrides), run_dir)
    trainer.train(progress=False)

    actors = {"agent": argmax_actor(trainer.policy.eval()), "nearest_frontier": BASELINES["nearest_frontier"]}
    episodes = evaluate_actors(actors, trainer.config.env, spec.episodes, spec.eval_seed, progress=False)
    agent = summarise(episodes["agent"])
    ratio, _, _ = travel_ratio(episodes["agent"], episodes["nearest_frontier"])
    series = scalar_series(run_dir, "charts/episodic_return", "charts/coverage", "charts/SPS")
    steps, returns = series["charts/episodic_return"]
    coverage_steps, coverage = series["charts/coverage"]
    _, sps = series["charts/SPS"]
    result = {
        "label": spec.label, "seed": spec.seed, "run_dir": str(run_dir),
        "parameters": sum(p.numel() for p in trainer.policy.parameters()),
        "success_rate": agent["success_rate"][0], "coverage": agent["coverage"][0],
        "travel_to_complete": agent["travel_to_complete"][0], "ratio_to_nearest_frontier": ratio,
        "final_return": float(np.mean(returns[-20:])) if returns else float("nan"),
        "sps": sps[-1] if sps else float("nan"),
        "curves": {"return": [steps, returns], "coverage": [coverage_steps, coverage]},
    }
    atomic_write_text(run_dir / RESULT, json.dumps(result))
    return result
