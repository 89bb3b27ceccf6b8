"""Training through Ray actors (local Ray, 2 CPUs): the same weights as in process, through a killed
worker and through --resume."""
import logging
import signal

import pytest
import torch

from cluster.rollout_actors import RayCollector
from learning.trainer import Trainer
from run.checkpoint import checkpoint_path
from run.interrupt import Stopped
from tests.helpers import kill_worker_mid_collect, smoke_config

RAY = ("env.vector=ray", "env.workers=2")
ROLLOUTS_WITH_RESETS = ("ppo.num_steps=50", "ppo.total_timesteps=300", "env.kwargs.max_steps=20", "run.image_every=0")


def final_weights(trainer: Trainer) -> dict[str, torch.Tensor]:
    trainer.train(progress=False)
    return {key: value.clone() for key, value in trainer.policy.state_dict().items()}


def assert_same_weights(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for key in a:
        assert torch.equal(a[key], b[key]), key


@pytest.fixture(scope="module")
def in_process_weights(tmp_path_factory):
    """The smoke run's final weights, trained in this process: what every Ray run below must end with."""
    run_dir = tmp_path_factory.mktemp("in_process")
    return final_weights(Trainer.create(smoke_config(run_dir), run_dir))


def test_a_ray_run_trains_the_same_weights_as_an_in_process_run(local_ray, tmp_path, in_process_weights):
    trainer = Trainer.create(smoke_config(tmp_path / "ray", *RAY), tmp_path / "ray")
    assert isinstance(trainer.collector, RayCollector)
    assert_same_weights(final_weights(trainer), in_process_weights)
    assert trainer.update == 3 and sorted(p.name for p in (tmp_path / "ray").glob("checkpoint_*.pt"))[-1] == \
        "checkpoint_000003.pt"


def test_a_worker_killed_mid_training_is_replaced_and_the_run_ends_with_the_same_weights(local_ray, tmp_path,
                                                                                           caplog):
    uninterrupted = final_weights(Trainer.create(smoke_config(tmp_path / "a", *ROLLOUTS_WITH_RESETS), tmp_path / "a"))
    trainer = Trainer.create(smoke_config(tmp_path / "b", *ROLLOUTS_WITH_RESETS, *RAY), tmp_path / "b")
    collector, rollouts = trainer.collector, []
    real_collect = collector.collect

    def collect(policy):  # worker 1 is killed in the middle of the third rollout
        killer = kill_worker_mid_collect(collector, 1) if len(rollouts) == 2 else None
        rollouts.append(real_collect(policy))
        if killer is not None:
            killer.join()
        return rollouts[-1]

    collector.collect = collect
    with caplog.at_level(logging.WARNING, logger="cluster.rollout_actors"):
        weights = final_weights(trainer)
    assert collector.restarts == 1
    assert "rollout worker 1 (envs 1-1) died mid-rollout" in caplog.text
    assert_same_weights(weights, uninterrupted)


def test_resuming_a_ray_run_continues_it_exactly(local_ray, tmp_path, in_process_weights):
    first = Trainer.create(smoke_config(tmp_path / "b", *RAY), tmp_path / "b")
    first.train(max_updates=1, progress=False)  # ends with a checkpoint and the workers stopped
    assert first.collector.workers == []
    resumed = Trainer.resume(tmp_path / "b")
    assert resumed.update == 1 and isinstance(resumed.collector, RayCollector)
    assert_same_weights(final_weights(resumed), in_process_weights)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=lambda s: s.name)
def test_a_signal_while_the_workers_collect_keeps_the_update_and_resumes_exactly(local_ray, tmp_path, sig,
                                                                                in_process_weights):
    """The signal lands in the driver while the actors play the second rollout: that update is kept,
    though no schedule saves it (a checkpoint is due every 1,000 updates; the weights do not depend
    on when checkpoints and pictures are due)."""
    settings = (*RAY, "run.checkpoint_every=1000", "run.image_every=0")
    trainer = Trainer.create(smoke_config(tmp_path / "b", *settings), tmp_path / "b")
    real_collect, calls = trainer.collector.collect, []

    def collect(policy):
        calls.append(None)
        if len(calls) == 2:
            signal.raise_signal(sig)
        return real_collect(policy)

    trainer.collector.collect = collect
    stopped = trainer.train(progress=False)
    assert stopped == Stopped(sig.name, 2, checkpoint_path(tmp_path / "b", 2))
    assert trainer.collector.workers == []  # the actors are gone with the run
    assert_same_weights(final_weights(Trainer.resume(tmp_path / "b")), in_process_weights)
