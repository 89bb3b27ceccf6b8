"""train.py with env.vector=ray as a user runs it: it starts its own local Ray and leaves none behind."""
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import ray

import train
from learning.trainer import Trainer
from run.checkpoint import latest_checkpoint, load_checkpoint
from tests.helpers import ROOT, SMOKE

OWNER = "TEST_RAY_OWNER"
"""An environment variable that marks the processes of one test, the Rays it starts included."""


def ray_processes(owner: str, wait_s: float = 20) -> list[str]:
    """Ray's own processes on this machine (a local cluster's GCS server and raylet, its workers)
    that carry ``OWNER=owner`` in their environment, as "PID program", once none is left or after
    ``wait_s`` (a shut-down Ray takes a moment to exit). A Ray's processes inherit the environment of
    the program that started it, so the Rays of other tests running beside this one never count."""
    mark = f"{OWNER}={owner}".encode()
    deadline = time.time() + wait_s
    while True:
        found = []
        for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
            try:
                program = cmdline.read_bytes().split(b"\0")[0].decode(errors="replace")
                is_ray = program.endswith(("/gcs_server", "/raylet")) or program.startswith("ray::")
                if is_ray and mark in (cmdline.parent / "environ").read_bytes().split(b"\0"):
                    found.append(f"{cmdline.parent.name} {program}")
            except OSError:  # gone meanwhile
                continue
        if not found or time.time() > deadline:
            return found
        time.sleep(0.5)


@pytest.fixture
def owner(monkeypatch) -> str:
    """This test's mark, in its environment and so in that of every process it starts. The test
    process's shared Ray is shut down: the test watches Rays start and stop on their own."""
    mark = uuid.uuid4().hex
    monkeypatch.setenv(OWNER, mark)
    if ray.is_initialized():
        ray.shutdown()
    return mark


def test_ctrl_c_saves_stops_the_workers_and_the_run_resumes(tmp_path, owner):
    run_dir = tmp_path / "run"
    command = [sys.executable, "train.py", "--config", str(SMOKE), f"run.run_dir={run_dir}", "env.vector=ray",
               "env.workers=2", "ppo.total_timesteps=100000", "run.image_every=0", "run.checkpoint_every=1000"]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while not list(run_dir.glob("events.*")) and time.time() < deadline:  # workers up, training under way
        time.sleep(0.2)
    assert ray_processes(owner, wait_s=0), "the mark must reach the Ray that train.py started"
    time.sleep(3)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 130, err
    newest = latest_checkpoint(run_dir)
    update = load_checkpoint(newest)["update"]
    assert update >= 1 and err.rstrip().endswith(f"stopped by SIGINT after update {update}; its checkpoint is "
                                                 f"{newest}; continue with: python train.py --resume {run_dir}")
    assert "Traceback" not in err
    time.sleep(1)
    assert ray_processes(owner) == []  # the actors and the local cluster it started are gone

    trainer = Trainer.resume(run_dir)  # starts its own local Ray again, and stops it at the end
    trainer.train(max_updates=1, progress=False)
    assert load_checkpoint(latest_checkpoint(run_dir))["update"] == update + 1
    assert not ray.is_initialized() and ray_processes(owner) == []


def test_an_unreachable_cluster_is_named_before_anything_is_written(tmp_path, capsys):
    run_dir = tmp_path / "run"
    start = time.time()
    assert train.main(["--config", str(SMOKE), f"run.run_dir={run_dir}", "env.vector=ray",
                       "run.ray_address=127.0.0.1:9"]) == 2
    assert time.time() - start < 30
    err = capsys.readouterr().err
    assert "no Ray cluster answers at 127.0.0.1:9" in err and "ray start --head" in err
    assert not run_dir.exists()
    assert train.main(["--config", str(SMOKE), f"run.run_dir={run_dir}", "env.vector=ray",
                       "run.ray_address=nonsense"]) == 2
    assert "Ray address 'nonsense' must look like host:port" in capsys.readouterr().err
