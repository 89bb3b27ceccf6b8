"""Shared test fixtures: random padded graphs, one small trained run, and a local Ray."""
from __future__ import annotations

import pytest

from bench.synthetic import random_graph
from tests.helpers import release_shared_local_ray, shared_local_ray, smoke_config


@pytest.fixture
def make_graph():
    return random_graph


@pytest.fixture
def local_ray():
    """This test process's local Ray, 2 CPUs (``tests.helpers.shared_local_ray``), left with its
    CPUs free for the next test (``release_shared_local_ray``)."""
    import ray

    shared_local_ray()
    yield ray
    release_shared_local_ray()


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory):
    """train.py on the smoke config, stopped after 2 of its 3 updates, then resumed with --resume."""
    import train
    from learning.trainer import Trainer
    from run.checkpoint import latest_checkpoint

    run_dir = tmp_path_factory.mktemp("smoke")
    Trainer.create(smoke_config(run_dir), run_dir, train.attention_heatmaps).train(max_updates=2)  # draws at update 2
    assert latest_checkpoint(run_dir).name == "checkpoint_000002.pt"
    assert train.main(["--resume", str(run_dir)]) == 0
    return run_dir


@pytest.fixture
def stale_checkpoint_run(smoke_run, tmp_path):
    """A run folder whose checkpoint has one node feature fewer than the observation: the smoke
    run's, as an older version of the observation layout would have saved it."""
    import torch

    from run.checkpoint import latest_checkpoint, load_checkpoint

    state = load_checkpoint(latest_checkpoint(smoke_run))
    weight = state["model"]["actor_trunk.initial_embedding.weight"]
    state["model"]["actor_trunk.initial_embedding.weight"] = weight[:, :-1]
    run_dir = tmp_path / "stale"
    run_dir.mkdir()
    (run_dir / "config.yaml").write_bytes((smoke_run / "config.yaml").read_bytes())
    torch.save(state, run_dir / "checkpoint_000001.pt")
    return run_dir
