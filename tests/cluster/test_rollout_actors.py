"""RayCollector on a local Ray (2 CPUs): the same rollouts as in process, workers killed and replaced."""
import logging

import pytest
import torch

from cluster.rollout_actors import RayCollector
from config import ConfigError
from learning.collector import VectorEnvCollector
from policy import PolicyNet
from tests.helpers import assert_same_rollout, kill_worker_mid_collect, smoke_config


@pytest.mark.parametrize("gae_values, forward_group", [("critic", 1), ("greedy_rollout", 2)])
def test_ray_rollouts_equal_the_in_process_collectors(local_ray, tmp_path, gae_values, forward_group):
    settings = ("env.num_envs=3", "env.kwargs.max_steps=8", f"ppo.gae_values={gae_values}",
                f"env.forward_group={forward_group}")  # 2: envs 0-1 share a pass, env 2 has its own
    config = smoke_config(tmp_path, *settings)
    torch.manual_seed(0)
    policy = PolicyNet(config.model)
    here = VectorEnvCollector(config)
    expected = [here.collect(policy) for _ in range(2)]
    assert any(r.truncated.any() for r in expected) and any(r.episodes for r in expected)
    for workers in (1, 2):
        collector = RayCollector(smoke_config(tmp_path, *settings, "env.vector=ray", f"env.workers={workers}"))
        try:
            for rollout in expected:
                assert_same_rollout(collector.collect(policy), rollout)
            assert collector.progress() == here.progress()
            assert collector.bytes_sent == sum(p.numel() * 4 for p in policy.state_dict().values())
            assert collector.bytes_received == expected[-1].nbytes()
        finally:
            collector.close()
    here.close()


def test_a_worker_killed_mid_rollout_is_replaced_and_the_rollout_is_the_same(local_ray, tmp_path, caplog):
    overrides = ("env.num_envs=2", "ppo.num_steps=50", "env.kwargs.max_steps=20")  # 2-3 episodes end in each
    config = smoke_config(tmp_path, *overrides)
    torch.manual_seed(0)
    policy = PolicyNet(config.model)
    here = VectorEnvCollector(config)
    expected = [here.collect(policy) for _ in range(3)]
    here.close()
    collector = RayCollector(smoke_config(tmp_path, *overrides, "env.vector=ray", "env.workers=2"))
    try:
        assert_same_rollout(collector.collect(policy), expected[0])  # the workers have started
        assert_same_rollout(collector.collect(policy), expected[1])
        killer = kill_worker_mid_collect(collector, 0)
        with caplog.at_level(logging.WARNING, logger="cluster.rollout_actors"):
            rollout = collector.collect(policy)
        killer.join()
        assert collector.restarts == 1
        assert "died mid-rollout" in caplog.text
        assert_same_rollout(rollout, expected[2])
    finally:
        collector.close()


def test_too_many_workers_is_refused_naming_the_numbers(local_ray, tmp_path):
    with pytest.raises(ConfigError, match=r"env.workers=3 is more than env.num_envs=2"):
        smoke_config(tmp_path, "env.vector=ray", "env.workers=3")
    with pytest.raises(ConfigError, match=r"env.workers=3 needs 3 CPUs, one per worker; the Ray cluster has 2"):
        RayCollector(smoke_config(tmp_path, "env.num_envs=4", "env.vector=ray", "env.workers=3"))
