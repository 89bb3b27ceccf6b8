"""A signal at any moment of a training ends it with the last finished update saved, said exactly.

Each test raises the signal in the trainer's own process at a chosen moment of a chosen update
(``signal.raise_signal`` runs the handler before the next line: no sleeping, no timing), then
checks what is on disk, what ``train()`` reports, and that ``--resume`` continues bit for bit.
"""
import signal

import pytest
import torch

import learning.trainer
import train
from learning.collector import VectorEnvCollector
from learning.trainer import Trainer
from learning.worker_processes import ProcessCollector
from run.checkpoint import checkpoint_path, checkpoints, load_checkpoint
from run.interrupt import Stopped
from tests.helpers import SMOKE, smoke_config

RUN = ("ppo.total_timesteps=160", "run.checkpoint_every=2", "run.image_every=1")
"""5 updates of 32 steps; checkpoints due after updates 2 and 4; an image episode after each."""
SIGNALS = [signal.SIGINT, signal.SIGTERM]


def signal_during(monkeypatch, owner, name: str, sig: signal.Signals, on_call: int) -> None:
    """Make the ``on_call``-th call of ``owner.name`` raise ``sig`` in the middle of its work."""
    original, calls = getattr(owner, name), []

    def wrapped(*args, **kwargs):
        calls.append(None)
        if len(calls) == on_call:
            signal.raise_signal(sig)
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, wrapped)


@pytest.fixture(scope="module")
def straight_weights(tmp_path_factory):
    """The weights of the run trained to the end without a stop."""
    run_dir = tmp_path_factory.mktemp("straight")
    Trainer.create(smoke_config(run_dir, *RUN), run_dir).train(progress=False)
    return load_checkpoint(checkpoints(run_dir)[0])["model"]


def assert_resumes_to(run_dir, weights) -> None:
    Trainer.resume(run_dir).train(progress=False)
    final = load_checkpoint(checkpoints(run_dir)[0])
    assert final["update"] == 5
    for name, tensor in weights.items():
        assert torch.equal(final["model"][name], tensor), name


# (moment, what the signal interrupts, which call of it, the update the stop keeps)
MOMENTS = [
    ("collection", (ProcessCollector, "collect"), 3, 3),  # the default: worker processes
    ("update", (learning.trainer, "ppo_update"), 3, 3),
    ("logging", (Trainer, "_log"), 3, 3),
    ("image episode", (Trainer, "_log_images"), 3, 3),  # after update 3, which no schedule saves
    ("checkpoint write", (learning.trainer, "save_checkpoint"), 1, 2),  # writing update 2's checkpoint
]


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
@pytest.mark.parametrize("moment, target, on_call, kept", MOMENTS, ids=[m[0] for m in MOMENTS])
def test_a_stop_at_any_moment_keeps_the_last_finished_update(tmp_path, monkeypatch, straight_weights,
                                                             moment, target, on_call, kept, sig):
    trainer = Trainer.create(smoke_config(tmp_path, *RUN), tmp_path)
    signal_during(monkeypatch, *target, sig, on_call)
    stopped = trainer.train(progress=False)
    monkeypatch.undo()
    assert stopped == Stopped(sig.name, kept, checkpoint_path(tmp_path, kept))
    assert checkpoints(tmp_path)[0] == stopped.checkpoint and load_checkpoint(stopped.checkpoint)["update"] == kept
    assert stopped.describe() == f"stopped by {sig.name} after update {kept}; its checkpoint is {stopped.checkpoint}"
    assert_resumes_to(tmp_path, straight_weights)


def test_in_process_envs_stopped_while_they_step_keep_the_update(tmp_path, monkeypatch, straight_weights):
    trainer = Trainer.create(smoke_config(tmp_path, *RUN, "env.vector=sync"), tmp_path)
    assert type(trainer.collector) is VectorEnvCollector
    signal_during(monkeypatch, VectorEnvCollector, "collect", signal.SIGINT, 3)
    stopped = trainer.train(progress=False)
    monkeypatch.undo()
    assert stopped == Stopped("SIGINT", 3, checkpoint_path(tmp_path, 3))
    assert_resumes_to(tmp_path, straight_weights)


def test_a_stop_right_after_a_resume_names_the_checkpoint_it_came_from(tmp_path, monkeypatch):
    Trainer.create(smoke_config(tmp_path, *RUN), tmp_path).train(max_updates=2, progress=False)
    trainer = Trainer.resume(tmp_path)
    signal_during(monkeypatch, ProcessCollector, "collect", signal.SIGTERM, 1)
    before = {path: path.stat().st_mtime_ns for path in checkpoints(tmp_path)}
    stopped = trainer.train(progress=False)
    assert stopped == Stopped("SIGTERM", 3, checkpoint_path(tmp_path, 3))
    assert all(path.stat().st_mtime_ns == mtime for path, mtime in before.items())  # update 2's untouched


def test_the_cli_says_what_was_saved_and_how_to_continue(tmp_path, monkeypatch, capsys):
    signal_during(monkeypatch, ProcessCollector, "collect", signal.SIGINT, 2)
    assert train.main(["--config", str(SMOKE), f"run.run_dir={tmp_path}", *RUN]) == 130
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last == (f"stopped by SIGINT after update 2; its checkpoint is {checkpoint_path(tmp_path, 2)}; "
                    f"continue with: python train.py --resume {tmp_path}")


def test_a_second_signal_before_the_first_update_says_nothing_was_saved(tmp_path, monkeypatch, capsys):
    original = ProcessCollector.collect

    def twice(self, policy):
        signal.raise_signal(signal.SIGINT)  # the first: finish the update, then stop
        signal.raise_signal(signal.SIGINT)  # the second: out at once
        return original(self, policy)

    monkeypatch.setattr(ProcessCollector, "collect", twice)
    assert train.main(["--config", str(SMOKE), f"run.run_dir={tmp_path}", *RUN]) == 130
    assert capsys.readouterr().err.strip().splitlines()[-1] == "interrupted; nothing was saved"
    assert checkpoints(tmp_path) == []


def test_a_second_signal_later_names_the_newest_checkpoint(tmp_path, monkeypatch, capsys):
    original, calls = ProcessCollector.collect, []

    def twice_in_the_fourth(self, policy):
        calls.append(None)
        if len(calls) == 4:
            signal.raise_signal(signal.SIGINT)
            signal.raise_signal(signal.SIGINT)
        return original(self, policy)

    monkeypatch.setattr(ProcessCollector, "collect", twice_in_the_fourth)
    assert train.main(["--config", str(SMOKE), f"run.run_dir={tmp_path}", *RUN]) == 130
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"interrupted; the newest checkpoint is {checkpoint_path(tmp_path, 2)}; "
        f"continue with: python train.py --resume {tmp_path}")
