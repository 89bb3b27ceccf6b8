"""Seeded vector envs: episodes get disjoint seeds, and replaying restores an env exactly."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from config import ConfigError, EnvConfig
from learning.envs import check_env_config, env_start_method, make_envs, restore_envs
from learning.progress import EpisodeProgress
from run.seeding import eval_episode_seed, train_episode_seed
from tests.map_folders import write_maps


def test_training_and_evaluation_seeds_never_meet():
    train = {train_episode_seed(run, env, episode) for run in range(3) for env in range(4) for episode in range(50)}
    held_out = {eval_episode_seed(seed, episode) for seed in range(3) for episode in range(200)}
    assert all(s % 2 == 0 for s in train) and all(s % 2 == 1 for s in held_out)
    assert not train & held_out


@pytest.mark.parametrize("vector", ["sync", "async"])
def test_replaying_episode_numbers_and_actions_restores_every_env(vector):
    config = EnvConfig(kwargs={"map_size": 16, "max_steps": 12}, num_envs=2, vector=vector)
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
    make_envs(config, run_seed=0, vector="sync").close()  # built from headers: the bad map is met only if played


def test_async_envs_are_forked_from_a_fork_server_in_a_process_that_runs_ray(local_ray):
    """A forked child of a process with Ray's threads can hang on a lock it inherited held."""
    config = EnvConfig(kwargs={"map_size": 16, "max_steps": 12}, num_envs=2, vector="async")
    assert local_ray.is_initialized() and env_start_method() == "forkserver"
    envs = make_envs(config, run_seed=3)
    try:
        assert {type(process._popen).__module__ for process in envs.processes} == {"multiprocessing.popen_forkserver"}
        obs, _ = envs.reset()
        obs, *_ = envs.step([int(np.flatnonzero(mask)[0]) for mask in obs["action_mask"]])
    finally:
        envs.close()
    sync = make_envs(EnvConfig(kwargs=config.kwargs, num_envs=2, vector="sync"), run_seed=3)
    first, _ = sync.reset()
    second, *_ = sync.step([int(np.flatnonzero(mask)[0]) for mask in first["action_mask"]])
    sync.close()
    for key in obs:  # the fork server's envs play as the in-process ones
        np.testing.assert_array_equal(obs[key], second[key])


def test_async_envs_are_forked_in_a_process_without_ray():
    """In a fresh process (this one may run a Ray another test started)."""
    code = ("from config import EnvConfig; from learning.envs import make_envs; "
            "envs = make_envs(EnvConfig(kwargs={'map_size': 16}, num_envs=1, vector='async'), run_seed=3); "
            "print(type(envs.processes[0]._popen).__module__); envs.close()")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.split() == ["multiprocessing.popen_fork"]


def test_a_program_that_leaves_async_envs_open_still_exits():
    """The env processes do not act on SIGTERM, which multiprocessing's exit handler sends before
    it joins them: without ``closed_at_exit`` this program waited for them for ever."""
    code = ("from config import EnvConfig; from learning.envs import make_envs; "
            "envs = make_envs(EnvConfig(kwargs={'map_size': 16}, num_envs=2, vector='async'), run_seed=3); "
            "envs.reset(); pids = [p.pid for p in envs.processes]; print(*pids)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    for pid in map(int, out.stdout.split()):  # and it joined its env processes: they are gone
        assert not Path(f"/proc/{pid}").exists()


def test_a_ctrl_c_while_the_env_processes_start_is_not_lost():
    """It used to be: this process ignored SIGINT while its workers started, so that they inherit
    the ignoring. Now it notes it and gets it again after; the half-started envs are stopped."""
    code = ("import os, signal; import learning.envs as E; from config import EnvConfig\n"
            "signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal, even under a runner that ignores it\n"
            "real = E.AsyncVectorEnv\n"
            "def starting(*args, **kwargs):\n"
            "    os.kill(os.getpid(), signal.SIGINT)  # a Ctrl-C while the env processes start\n"
            "    return real(*args, **kwargs)\n"
            "E.AsyncVectorEnv = starting\n"
            "try:\n"
            "    E.make_envs(EnvConfig(kwargs={'map_size': 16}, num_envs=2, vector='async'), run_seed=3)\n"
            "    print('lost')\n"
            "except KeyboardInterrupt:\n"
            "    print('interrupted')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert (out.returncode, out.stdout.split()) == (0, ["interrupted"]) and "Traceback" not in out.stderr, out.stderr


def test_the_env_processes_act_on_neither_ctrl_c_nor_sigterm():
    envs = make_envs(EnvConfig(kwargs={"map_size": 16}, num_envs=2, vector="async"), run_seed=3)
    try:
        envs.reset(seed=0)
        for process in envs.processes:
            os.kill(process.pid, signal.SIGINT)
            os.kill(process.pid, signal.SIGTERM)
        time.sleep(0.5)
        assert all(process.is_alive() for process in envs.processes)
        envs.step(np.zeros(2, dtype=np.int64))  # and they still step
    finally:
        envs.close()
