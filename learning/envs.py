"""Vector environments whose episodes can be replayed, so a killed run resumes exactly.

Each sub-env is wrapped in ``SeededEpisodes``: episode ``e`` of env ``i`` is reset with
``train_episode_seed(run_seed, i, e)``, so an env's state is fully determined by its episode
number and the actions taken since that episode began. A checkpoint stores just those integers,
and ``restore_envs`` rebuilds every env by replaying them (at most ``max_steps`` steps each).
A process may hold any slice of a run's envs: env ``i`` is the same env wherever it runs.
"""
from __future__ import annotations

import atexit
import functools
import multiprocessing
import multiprocessing.forkserver
import signal
import sys
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from types import FrameType
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv

import env as _register_env_ids  # noqa: F401  (registers GridExplore-* with gymnasium)
from config import ConfigError, EnvConfig, apply_override
from env.greedy_value import GreedyValue
from learning.progress import EpisodeProgress
from run.interrupt import SIGNALS
from run.seeding import train_episode_seed


class SeededEpisodes(gym.Wrapper):
    """Resets episode ``e`` of env ``env_index`` with its own seed; ``restore`` replays one.

    A seed passed to ``reset`` is ignored: the schedule of per-episode seeds replaces it, which is
    what makes an env's state recoverable from (episode number, actions since reset).
    """

    def __init__(self, env: gym.Env, run_seed: int, env_index: int):
        super().__init__(env)
        self.run_seed = run_seed
        self.env_index = env_index
        self.episode = -1

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        self.episode += 1
        return self.env.reset(seed=train_episode_seed(self.run_seed, self.env_index, self.episode), options=options)

    def restore(self, episodes: dict[int, int], actions: dict[int, list[int]]) -> dict[str, np.ndarray]:
        """Rebuild this env at episode ``episodes[i]`` after ``actions[i]`` (i = this env's global index)."""
        self.episode = episodes[self.env_index] - 1
        obs, _ = self.reset()
        for action in actions[self.env_index]:
            obs, *_ = self.env.step(action)
        return obs


def make_env(config: EnvConfig, render_mode: str | None = None) -> gym.Env:
    """One environment as ``config`` describes it (id and keyword overrides)."""
    return gym.make(config.id, render_mode=render_mode, **config.kwargs)


def check_env_config(config: EnvConfig, all_maps: bool = True) -> None:
    """Build one env and close it, so that a bad id or keyword fails now, as a ``ConfigError``
    naming it, rather than later in a worker or mid-evaluation.

    With ``all_maps`` (the CLIs' check before any episode) every file of a ``map_dir``
    collection is checked whole too, once per process (under a second for 5,663 PNGs), and one
    line says how many files beside the maps were skipped; building the env alone reads only
    the maps' headers.
    """
    try:
        gym.spec(config.id)
        env = make_env(config)
        try:
            maps = getattr(env.unwrapped, "map_collection", None)
            if all_maps and maps is not None and not maps.checked:
                for _ in maps.check_each():
                    pass
                if maps.skipped:
                    print(f"map_dir={config.kwargs['map_dir']!r}: {len(maps)} maps; skipped "
                          f"{len(maps.skipped)} file(s) that are not maps ({', '.join(maps.skipped[:3])}"
                          f"{', ...' if len(maps.skipped) > 3 else ''})", file=sys.stderr)
        finally:
            env.close()
    except (gym.error.Error, ValueError, TypeError) as error:
        raise ConfigError(f"env.id={config.id!r} with env.kwargs={config.kwargs}: {error}") from error


def with_env_overrides(env: EnvConfig, overrides: Sequence[str]) -> EnvConfig:
    """``env`` with its keyword arguments changed by ``KEY=VALUE`` overrides (values parsed as
    YAML); raises ``ConfigError`` naming a malformed override or a key or value the env refuses."""
    kwargs = dict(env.kwargs)
    for override in overrides:
        apply_override(kwargs, override)
    env = replace(env, kwargs=kwargs)
    check_env_config(env)
    return env


def make_envs(config: EnvConfig, run_seed: int, greedy_value: bool = False, indices: Sequence[int] | None = None,
              vector: str | None = None, wrap: Callable[[gym.Env], gym.Env] | None = None) -> gym.vector.VectorEnv:
    """The run's envs ``indices`` (default: all ``config.num_envs``), seeded by their global index,
    in a Sync or Async vector env (``vector``, default ``config.vector``; ``ray`` workers hold
    Sync ones) with same-step autoreset; with ``greedy_value`` each also reports W(s)
    (``env.greedy_value.GreedyValue``); ``wrap``, a picklable callable, wraps each env last,
    inside the seeding, in the env's own process when ``async`` (the planner layer's imitation
    adds its lookahead costs so: ``planner.lookahead.LookaheadCosts``).

    Same-step autoreset puts an ended episode's last observation in ``info["final_obs"]`` and
    returns the next episode's first observation at once, so no rollout step is wasted. Every map
    of a ``map_dir`` was checked before (``Trainer.create`` / ``resume``): Ray workers build
    their envs from the headers alone.
    """
    check_env_config(config, all_maps=False)

    def make_one(index: int):
        def make() -> gym.Env:
            one = make_env(config)
            one = GreedyValue(one) if greedy_value else one
            return SeededEpisodes(one if wrap is None else wrap(one), run_seed, index)
        return make

    indices = range(config.num_envs) if indices is None else indices
    if (vector or config.vector) != "async":
        return SyncVectorEnv([make_one(i) for i in indices], autoreset_mode=AutoresetMode.SAME_STEP)
    start_method, envs = env_start_method(), None
    try:
        with interrupts_ignored_by_children():
            envs = AsyncVectorEnv([make_one(i) for i in indices], autoreset_mode=AutoresetMode.SAME_STEP,
                                  context=start_method)
    except BaseException:  # e.g. a Ctrl-C that came while the processes started, delivered now
        if envs is not None:
            stop_at_once(envs)
        raise
    closed_at_exit(envs)
    return envs


_OPEN_AT_EXIT: "weakref.WeakSet[AsyncVectorEnv]" = weakref.WeakSet()


def closed_at_exit(envs: AsyncVectorEnv) -> None:
    """Have ``envs`` closed when the program exits, if nothing closed it before.

    Its processes do not act on SIGTERM (``interrupts_ignored_by_children``), and
    multiprocessing's own exit handler terminates its children with SIGTERM and then joins them: a
    program leaving an async vector env open (an exception on the way out, a Ctrl-C during
    start-up) would wait for them for ever. ``_close_left_open``, registered after
    multiprocessing's handler, runs before it.
    """
    _register_exit_handler()
    _OPEN_AT_EXIT.add(envs)


@functools.cache
def _register_exit_handler() -> None:
    atexit.register(_close_left_open)


def _close_left_open() -> None:
    """The exit handler: every vector env ``closed_at_exit`` holds that is still open, stopped."""
    for envs in list(_OPEN_AT_EXIT):
        if not envs.closed:
            stop_at_once(envs)


def kill_all(processes: Sequence[multiprocessing.process.BaseProcess]) -> None:
    """SIGKILL every process still alive (env and rollout-worker processes ignore SIGTERM), then reap them."""
    for process in processes:
        if process.is_alive():
            process.kill()
    for process in processes:
        process.join()


def stop_at_once(envs: AsyncVectorEnv) -> None:
    """Kill the processes of ``envs`` (``kill_all``), then close it: its pipes."""
    kill_all(envs.processes)
    envs.close(terminate=True)


def env_start_method() -> str | None:
    """How env and rollout-worker processes start: the platform's default (a fork on Linux, which
    costs no imports), or ``"forkserver"`` in a process that runs Ray. Ray's gRPC threads hold
    locks that a forked child inherits held and may wait on forever (seen: an env process of
    ``bench.collector_speed``, forked inside its Ray session, hung in gRPC's clean-up during its
    first reset), so there a worker is forked from this process's fork server instead: a fresh
    interpreter that runs no thread, started once (``start_fork_server``) with the workers' modules
    imported. A smoke training whose rollout worker starts so takes about 1 s longer than with a
    fork; with a fresh interpreter each (``spawn``, which this replaced) it took about 5 s longer
    (docs/performance.md, "Workers forked from a fork server where Ray runs"). Ray is only looked
    up, never imported, here."""
    ray = sys.modules.get("ray")
    if ray is None or not ray.is_initialized():
        return None
    start_fork_server()
    return "forkserver"


FORK_SERVER_PRELOAD = ["learning.worker_processes"]
"""What the fork server imports before it forks a worker: the rollout worker's modules (torch, the
policy, the envs and gymnasium, so also the env workers'), never Ray."""


def start_fork_server() -> None:
    """Start this process's fork server if it is not running, with SIGINT and SIGTERM ignored.

    A fresh interpreter keeps no Python handler through exec, but it keeps SIG_IGN, and every
    process forked from it keeps it too: neither a terminal's Ctrl-C nor a group's SIGTERM reaches
    the server or the workers it forks (the trainer acts on them, ``run/interrupt.py``). This process
    ignores them only while it checks that the server runs, and, the first time, starts it.

    The server lives as long as this process, and the workers it forks get the environment
    variables this process had when the server started: a later change to ``os.environ`` does not
    reach them (its working folder does: each worker moves to this process's at its start).
    """
    multiprocessing.set_forkserver_preload(FORK_SERVER_PRELOAD)
    with signals_handled_by(signal.SIG_IGN):
        multiprocessing.forkserver.ensure_running()


@contextmanager
def signals_handled_by(handler: Any) -> Iterator[None]:
    """SIGINT and SIGTERM go to ``handler`` in the block, then to the handlers they had. Outside
    the main thread, which alone may set them, the block runs with them untouched."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, handler) for sig in SIGNALS}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


@contextmanager
def interrupts_ignored_by_children() -> Iterator[None]:
    """Processes started in the block ignore SIGINT and SIGTERM; this one acts on them after it.

    A terminal's Ctrl-C goes to every process of the foreground group. The env workers of an
    ``AsyncVectorEnv`` would die of it mid-step and take the training down before it could save;
    they never act on these signals, and the trainer alone does (``run/interrupt.py``). They still
    end with the trainer: ``close()``, their pipe closing when it dies, or killed at its exit if
    it left them open (``closed_at_exit``).

    In the block this process only notes the signals, and a forked worker inherits that handler
    and keeps it, so it notes them and does nothing else (a worker forked from the fork server
    ignores them: ``start_fork_server``). At the end of the block this process gets the signals it
    noted again (``signal.raise_signal``), under the handlers it had, so a Ctrl-C while the workers
    start is not lost.
    """
    noted: list[int] = []

    def note(signum: int, frame: FrameType | None) -> None:
        noted.append(signum)

    try:
        with signals_handled_by(note):
            yield
    finally:
        for sig in dict.fromkeys(noted):  # each signal once, in the order it came
            signal.raise_signal(sig)


def restore_envs(envs: gym.vector.VectorEnv, progress: EpisodeProgress, indices: Sequence[int]) -> dict[str, np.ndarray]:
    """Replay envs ``indices`` (``progress`` holds their places, in that order) to where they were;
    returns the batched current observation."""
    envs.reset()
    episodes, actions = dict(zip(indices, progress.episodes)), dict(zip(indices, progress.actions))
    per_env: Any = envs.call("restore", episodes, actions)
    return {key: np.stack([obs[key] for obs in per_env]) for key in per_env[0]}
