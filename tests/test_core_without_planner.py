"""The core stands without the planner layer: in a copy of the project with ``planner/`` (and the
``experiments/`` built on it) deleted, training, evaluating the agent against the baselines,
visualising and the head-count sweep all run, and none of them so much as looks for the planner
(a module that did would fail at its import: the folder is not there)."""
import shutil
import subprocess
import sys

import pytest

from tests.helpers import ROOT

LEFT_OUT = ("planner/", "experiments/", "tests/", "bench/planner_speed.py")


@pytest.fixture(scope="module")
def core_only(tmp_path_factory):
    """The project's files (tracked, and new ones git does not ignore) less ``LEFT_OUT``."""
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout.split()
    copy = tmp_path_factory.mktemp("core_only")
    for name in listed:
        if name.startswith(LEFT_OUT) or not (ROOT / name).is_file():
            continue
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, copy / name)
    assert (copy / "train.py").is_file() and not (copy / "planner").exists()
    return copy


def run(copy, *argv: str) -> str:
    done = subprocess.run([sys.executable, *argv], cwd=copy, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout + done.stderr


def test_training_evaluating_and_visualising_run_without_the_planner(core_only):
    run(core_only, "train.py", "--config", "configs/smoke.yaml", "run.run_dir=runs/smoke", "run.image_every=1")
    out = run(core_only, "evaluate.py", "--checkpoint", "runs/smoke", "--episodes", "2")
    assert "| agent (argmax) |" in out and "| greedy |" in out and "planner" not in out
    # a shipped file carries a map predictor: without the layer that plays it, the agent plays alone
    out = run(core_only, "evaluate.py", "--checkpoint", "pretrained/default.pt", "--episodes", "1",
              "--env", "map_size=16", "--policy", "agent", "greedy")
    assert "| agent (argmax) |" in out and "| planner |" not in out
    done = subprocess.run([sys.executable, "evaluate.py", "--checkpoint", "runs/smoke", "--policy", "planner"],
                          cwd=core_only, capture_output=True, text=True)
    assert done.returncode == 2 and "this checkout has no planner layer (planner/)" in done.stderr
    run(core_only, "visualize.py", "--checkpoint", "runs/smoke", "--out", "pictures")
    assert (core_only / "pictures" / "routes.png").is_file() and not (core_only / "pictures" / "map_guess.png").exists()


def test_the_head_count_sweep_runs_without_the_planner(core_only):
    out = run(core_only, "ablate.py", "--heads", "1", "2", "--seeds", "1", "--config", "configs/smoke.yaml",
              "--episodes", "1", "ppo.total_timesteps=32", "--out", "runs/ablation")
    assert (core_only / "runs" / "ablation" / "results.md").is_file(), out
