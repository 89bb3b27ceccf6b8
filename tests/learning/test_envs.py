"""Seeded vector envs: episodes get disjoint seeds, and replaying restores an env exactly."""

import numpy as np
import pytest
from PIL import Image

from config import ConfigError, EnvConfig
from learning.envs import check_env_config, make_envs, restore_envs
from learning.progress import EpisodeProgress
from run.seeding import eval_episode_seed, train_episode_seed
from tests.map_folders import write_maps


def test_training_and_evaluation_seeds_never_meet():
    train = {train_episode_seed(run, env, episode) for run in range(3) for env in range(4) for episode in range(50)}
    held_out = {eval_episode_seed(seed, episode) for seed in range(3) for episode in range(200)}
    assert all(s % 2 == 0 for s in train) and all(s % 2 == 1 for s in held_out)
    assert not train & held_out


def test_replaying_episode_numbers_and_actions_restores_every_env():
    config = EnvConfig(kwargs={"map_size": 16, "max_steps": 12}, num_envs=2)
    envs = make_envs(config, run_seed=3)
    obs, _ = envs.reset()
    rng = np.random.default_rng(0)
    episodes, actions = [0, 0], [[], []]
    for _ in range(20):  # long enough for episodes to end and autoreset
        action = [int(rng.choice(np.flatnonzero(mask))) for mask in obs["action_mask"]]
        obs, _, terminated, truncated, _ = envs.step(action)
        for i in range(2):
            if terminated[i] or truncated[i]:
                episodes[i], actions[i] = episodes[i] + 1, []
            else:
                actions[i].append(action[i])
    envs.close()
    assert max(episodes) >= 1
    progress = EpisodeProgress(episodes, actions)
    fresh = make_envs(config, run_seed=3)
    restored = restore_envs(fresh, progress, range(2))
    fresh.close()
    for key in obs:
        np.testing.assert_array_equal(restored[key], obs[key], err_msg=key)
    # A slice of the envs, on its own (as a Ray worker holds it), is the same env 1.
    alone = make_envs(config, run_seed=3, indices=[1])
    restored = restore_envs(alone, progress.slice(1, 1), [1])
    alone.close()
    for key in obs:
        np.testing.assert_array_equal(restored[key][0], obs[key][1], err_msg=key)


def test_the_cli_check_reads_every_map_of_a_folder_whole_and_the_envs_only_read_headers(tmp_path):
    folder = write_maps(tmp_path / "maps")
    Image.fromarray(np.arange(144, dtype=np.uint8).reshape(12, 12)).save(folder / "20.png")
    damaged = bytearray((folder / "20.png").read_bytes())
    damaged[-20] ^= 0xFF  # a byte of the pixel data: the header reads, the checksum does not match
    (folder / "20.png").write_bytes(bytes(damaged))
    config = EnvConfig(kwargs={"map_dir": str(folder), "max_steps": 4}, num_envs=1)
    with pytest.raises(ConfigError, match=r"20\.png: not a readable image"):
        check_env_config(config)
    make_envs(config, run_seed=0).close()  # built from headers: the bad map is met only if played
