"""What survives an interrupt and what is refused: one training per folder, Ctrl-C saves, history kept."""
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

import train
from learning.trainer import Trainer
from run.checkpoint import latest_checkpoint, load_checkpoint
from run.lock import RunLock, RunLockedError
from tests.helpers import ROOT, SMOKE, smoke_config


def test_a_second_training_in_the_same_folder_is_refused_naming_the_holder(tmp_path, capsys):
    first = Trainer.create(smoke_config(tmp_path, "run.image_every=0"), tmp_path)
    config_before = (tmp_path / "config.yaml").read_text()
    assert train.main(["--config", str(SMOKE), f"run.run_dir={tmp_path}", "seed=9"]) == 2
    assert f"is in use by another training (pid {os.getpid()} on " in capsys.readouterr().err
    assert (tmp_path / "config.yaml").read_text() == config_before  # nothing overwritten
    first.train(max_updates=1)  # releases the folder when it ends
    Trainer.resume(tmp_path).close()


def test_the_lock_of_a_killed_training_is_stale_and_does_not_block(tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from run.lock import RunLock; "
                               f"RunLock({str(tmp_path)!r}).acquire(); print('held', flush=True); time.sleep(60)"],
                              cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    with pytest.raises(RunLockedError, match=f"pid {holder.pid} on"):
        RunLock(tmp_path).acquire()
    holder.kill()
    holder.wait()
    assert (tmp_path / ".lock").exists()  # the file stays behind, its lock does not
    RunLock(tmp_path).acquire().release()


def test_a_forked_child_outliving_a_killed_training_does_not_hold_its_folder(tmp_path):
    """Async env workers are forked children: they must not keep the lock of a SIGKILLed training."""
    holder = subprocess.Popen([sys.executable, "-c", "import os, sys, time; from run.lock import RunLock; "
                               f"RunLock({str(tmp_path)!r}).acquire(); child = os.fork()\n"
                               "if child == 0:\n    print(os.getpid(), flush=True); time.sleep(60); os._exit(0)\n"
                               "time.sleep(60)"],
                              cwd=ROOT, stdout=subprocess.PIPE, text=True)
    child = int(holder.stdout.readline())  # the child runs: its fork handlers have run
    holder.kill()
    holder.wait()
    try:
        os.kill(child, 0)  # the child is still alive
        RunLock(tmp_path).acquire().release()
    finally:
        os.kill(child, signal.SIGKILL)


def scalar_steps(run_dir, tag="losses/policy_loss"):
    events = EventAccumulator(str(run_dir), size_guidance={"scalars": 0})
    events.Reload()
    return [event.step for event in events.Scalars(tag)]


def test_resuming_keeps_the_checkpointed_updates_scalars_and_a_finished_run_is_left_alone(smoke_run, tmp_path):
    # smoke_run trained 2 updates (checkpoint at global step 64), then resumed for the third.
    assert scalar_steps(smoke_run) == [32, 64, 96]
    run = shutil.copytree(smoke_run, tmp_path / "run")
    files = sorted(p.name for p in run.iterdir())
    assert train.main(["--resume", str(run)]) == 0  # already finished: nothing to do
    assert sorted(p.name for p in run.iterdir()) == files and scalar_steps(run) == [32, 64, 96]


def test_ctrl_c_saves_the_update_in_progress_and_names_the_resume_command(tmp_path):
    run_dir = tmp_path / "interrupted"
    command = [sys.executable, "train.py", "--config", str(SMOKE), f"run.run_dir={run_dir}",
               "ppo.total_timesteps=100000", "run.image_every=0", "run.checkpoint_every=1000"]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while not list(run_dir.glob("events.*")) and time.time() < deadline:  # training has started
        time.sleep(0.2)
    time.sleep(2)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 130, err
    last = [line for line in err.splitlines() if line.strip()][-1]
    newest = latest_checkpoint(run_dir)
    assert last == (f"stopped by SIGINT after update {load_checkpoint(newest)['update']}; its checkpoint is "
                    f"{newest}; continue with: python train.py --resume {run_dir}")
    assert "Traceback" not in err
    trainer = Trainer.resume(run_dir)
    trainer.train(max_updates=1)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_to_the_whole_process_group_saves_with_rollout_worker_processes(tmp_path, sig):
    """A terminal's Ctrl-C reaches every process of the group: the rollout workers must not die of it."""
    run_dir = tmp_path / "run"
    command = [sys.executable, "train.py", "--config", str(SMOKE), f"run.run_dir={run_dir}", "env.vector=processes",
               "ppo.total_timesteps=100000", "run.image_every=0", "run.checkpoint_every=1000"]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)  # its own group, as a terminal's foreground job
    deadline = time.time() + 120
    while not list(run_dir.glob("events.*")) and time.time() < deadline:
        time.sleep(0.2)
    time.sleep(2)
    os.killpg(process.pid, sig)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 128 + sig, err
    newest = latest_checkpoint(run_dir)
    assert err.rstrip().endswith(f"stopped by {sig.name} after update {load_checkpoint(newest)['update']}; its "
                                 f"checkpoint is {newest}; continue with: python train.py --resume {run_dir}")
    assert "Traceback" not in err
