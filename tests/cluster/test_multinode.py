"""A simulated three-node cluster on this machine (ray.cluster_utils.Cluster, one CPU a node): rollout
workers and sweep runs land on more than one node, and the code reaches them through runtime_env."""
import csv

import pytest
import ray
import torch
from ray.cluster_utils import Cluster

import ablate
from cluster.rollout_actors import RayCollector
from learning.collector import VectorEnvCollector
from policy import PolicyNet
from tests.helpers import SMOKE, assert_same_rollout, smoke_config


@pytest.fixture(scope="module")
def cluster():
    if ray.is_initialized():
        ray.shutdown()
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    for _ in range(2):
        cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    yield cluster
    if ray.is_initialized():
        ray.shutdown()
    cluster.shutdown()


def test_rollout_workers_spread_over_nodes_and_still_equal_the_in_process_rollout(cluster, tmp_path):
    config = smoke_config(tmp_path, "env.num_envs=3", "env.kwargs.max_steps=8")
    torch.manual_seed(0)
    policy = PolicyNet(config.model)
    here = VectorEnvCollector(config)
    expected = here.collect(policy)
    here.close()
    collector = RayCollector(smoke_config(tmp_path, "env.num_envs=3", "env.kwargs.max_steps=8", "env.vector=ray",
                                          "env.workers=3", f"run.ray_address={cluster.address}"))
    try:
        nodes = {node for node, _ in ray.get([w.where.remote() for w in collector.workers])}
        assert len(nodes) == 3  # one CPU a node, one CPU a worker: every node holds one
        assert_same_rollout(collector.collect(policy), expected)
    finally:
        collector.close()
    assert not ray.is_initialized()  # it joined the cluster itself, and left it


def test_sweep_runs_land_on_several_nodes(cluster, tmp_path, capsys):
    """Two runs of one CPU each, submitted together to nodes of one CPU: both run at once, so on two nodes."""
    out = tmp_path / "sweep"
    assert ablate.main(["--heads", "1", "2", "--seeds", "1", "--config", str(SMOKE), "--episodes", "2",
                        "--address", cluster.address, "--out", str(out), "ppo.total_timesteps=64"]) == 0
    rows = list(csv.DictReader(open(out / "results.csv")))
    assert len(rows) == 2 and len({row["node"] for row in rows}) == 2, [row["node"] for row in rows]


def test_no_address_starts_a_ray_of_its_own_beside_a_running_cluster(cluster):
    """An empty address means a new local Ray (docs/scaling.md), not the cluster that `ray start`
    (here, the simulated one) last started on this machine, and a local one may be sized."""
    from cluster.connect import cluster_cpus, connect

    if ray.is_initialized():
        ray.shutdown()
    assert connect("", num_cpus=2)
    try:
        assert ray.get_runtime_context().gcs_address != cluster.address
        assert cluster_cpus() == 2  # the simulated cluster has 3
    finally:
        ray.shutdown()
