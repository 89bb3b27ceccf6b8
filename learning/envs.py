"""Vector environments whose episodes can be replayed, so a killed run resumes exactly.

Each sub-env is wrapped in ``SeededEpisodes``: episode ``e`` of env ``i`` is reset with
``train_episode_seed(run_seed, i, e)``, so an env's state is fully determined by its episode
number and the actions taken since that episode began. A checkpoint stores just those integers,
and ``restore_envs`` rebuilds every env by replaying them (at most ``max_steps`` steps each).
A process may hold any slice of a run's envs: env ``i`` is the same env wherever it runs.
"""
from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, SyncVectorEnv

import env as _register_env_ids  # noqa: F401  (registers GridExplore-* with gymnasium)
from config import ConfigError, EnvConfig, apply_override
from env.greedy_value import GreedyValue
from learning.progress import EpisodeProgress
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
              wrap: Callable[[gym.Env], gym.Env] | None = None) -> gym.vector.SyncVectorEnv:
    """The run's envs ``indices`` (default: all ``config.num_envs``), seeded by their global index,
    in a SyncVectorEnv with same-step autoreset (a worker process or Ray actor holds one for its
    slice); with ``greedy_value`` each also reports W(s) (``env.greedy_value.GreedyValue``);
    ``wrap`` wraps each env last, inside the seeding (the planner layer's imitation adds its
    lookahead costs so: ``planner.lookahead.LookaheadCosts``).

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
    return SyncVectorEnv([make_one(i) for i in indices], autoreset_mode=AutoresetMode.SAME_STEP)


def restore_envs(envs: gym.vector.VectorEnv, progress: EpisodeProgress, indices: Sequence[int]) -> dict[str, np.ndarray]:
    """Replay envs ``indices`` (``progress`` holds their places, in that order) to where they were;
    returns the batched current observation."""
    envs.reset()
    episodes, actions = dict(zip(indices, progress.episodes)), dict(zip(indices, progress.actions))
    per_env: Any = envs.call("restore", episodes, actions)
    return {key: np.stack([obs[key] for obs in per_env]) for key in per_env[0]}
