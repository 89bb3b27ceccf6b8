"""Sweep runs as Ray tasks (local Ray, 2 CPUs): a run whose process is killed is retried from its
checkpoint, and the progress bar counts updates, not runs."""
import os
import re
import signal
import threading
import time
from pathlib import Path

from cluster.connect import completion_order
from cluster.sweep import run_sweep, updates_behind
from evaluation.ablation_run import RunSpec
from run.checkpoint import checkpoint_path
from tests.helpers import SMOKE


def spec(out: Path, name: str, *overrides: str) -> RunSpec:
    return RunSpec(label=name, overrides=overrides, seed=1, run_dir=str(out / name), config_path=str(SMOKE),
                   episodes=2, eval_seed=0, torch_threads=1)


def kill_the_run_once_it_has(run_dir: Path, update: int, killed: list) -> None:
    """SIGKILL the process training in ``run_dir`` (named by its lock) once checkpoint ``update`` exists."""
    deadline = time.time() + 120
    while not checkpoint_path(run_dir, update).exists() and time.time() < deadline:
        time.sleep(0.05)
    pid = int(re.match(r"pid (\d+)", (run_dir / ".lock").read_text()).group(1))
    written = checkpoint_path(run_dir, 1).stat().st_mtime_ns
    os.kill(pid, signal.SIGKILL)
    killed.append((pid, written))


def test_a_run_whose_process_dies_is_retried_from_its_checkpoint(local_ray, tmp_path):
    long_run = spec(tmp_path, "long", "ppo.total_timesteps=256")  # 8 updates of 32 steps
    killed: list[tuple[int, int]] = []
    killer = threading.Thread(target=kill_the_run_once_it_has, args=(Path(long_run.run_dir), 3, killed))
    killer.start()
    results, failures = run_sweep([long_run, spec(tmp_path, "short")], cpus_per_run=1, gpus_per_run=0, retries=2)
    killer.join()
    assert killed and failures == []
    assert [r["label"] for r in results] == ["long", "short"]  # in the specs' order
    assert checkpoint_path(Path(long_run.run_dir), 8).exists()
    # Resumed, not restarted: the first checkpoint, written before the kill, was not written again.
    assert checkpoint_path(Path(long_run.run_dir), 1).stat().st_mtime_ns == killed[0][1]


def test_a_run_that_raises_is_reported_with_its_folder_and_not_retried(local_ray, tmp_path):
    bad = spec(tmp_path, "bad", "ppo.learning_rate=1e6", "ppo.total_timesteps=640")  # diverges
    results, failures = run_sweep([bad, spec(tmp_path, "good")], cpus_per_run=1, gpus_per_run=0, retries=2)
    assert [r["label"] for r in results] == ["good"]
    assert len(failures) == 1 and failures[0].startswith(f"{bad.run_dir}: NonFiniteLossError: ")


def test_the_bar_counts_updates_and_a_resumed_sweep_starts_it_at_what_was_done(local_ray, tmp_path, capsys):
    done_before = spec(tmp_path, "before")  # smoke: 3 updates
    assert run_sweep([done_before], cpus_per_run=1, gpus_per_run=0, retries=0)[1] == []
    capsys.readouterr()
    results, failures = run_sweep([done_before, spec(tmp_path, "new")], cpus_per_run=1, gpus_per_run=0, retries=0)
    assert failures == [] and len(results) == 2
    bar = capsys.readouterr().err
    # It starts at the 3 updates already behind (not counted for the rate) and ends at all 6.
    assert re.search(r"\| 3/6 \[00:0\d<\?, \?update/s, 0 of 2 runs ended\]", bar), bar
    assert "| 6/6 [" in bar and "2 of 2 runs ended]" in bar


def test_updates_behind_reads_the_latest_checkpoint_of_the_run_folder(tmp_path):
    run = spec(tmp_path, "run")
    assert updates_behind(run, total=160) == 0  # no folder yet
    Path(run.run_dir).mkdir()
    for update in (5, 45, 10):
        checkpoint_path(Path(run.run_dir), update).touch()
    assert updates_behind(run, total=160) == 45
    assert updates_behind(run, total=40) == 40  # never more than the run's budget


def test_completion_order_ticks_while_no_task_finishes(local_ray):
    import ray

    slow = ray.remote(lambda: time.sleep(1.5))
    ticks: list[float] = []
    order = list(completion_order([slow.remote(), ray.put(None)], tick=lambda: ticks.append(time.time()),
                                  every_s=0.3))
    assert order == [1, 0]  # the ready one first
    assert 2 <= len(ticks) <= 6
