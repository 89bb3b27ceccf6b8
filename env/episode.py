"""One whole episode with any player: the signature every player shares, and what an episode ends with.

A player (``Actor``) is the trained policy (``graph_batch.argmax_actor``), a baseline
(``env.baselines``) or the planner; the trainer's image episode, the evaluation and the
pictures all play through ``run_episode``.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import gymnasium as gym
import numpy as np

Actor = Callable[[dict, gym.Env], int]
"""``act(obs, env) -> slot``: the signature shared by the trained policy and the baselines."""

@dataclass
class EpisodeResult:
    success: bool
    """Exploration completed (terminated) before the step limit."""
    coverage: float
    """Fraction of reachable free cells known at the end."""
    steps: int
    travel_distance: float
    episodic_return: float
    map_family: str = ""
    """The map's family (``rooms``, ``caves``, ...; ``file`` for your own map), for per-family breakdowns."""
    map_file: str | None = None
    """The map's file (its name in a ``map_dir``), None for a procedural map (and in reports
    written before map files were recorded)."""


def run_episode(env: gym.Env, act: Actor, seed: int, record: bool = False, options: dict | None = None
                ) -> tuple[EpisodeResult, list[np.ndarray]]:
    """One episode from ``env.reset(seed=seed, options=options)``; with ``record`` also its rendered frames."""
    obs, info = env.reset(seed=seed, options=options)
    frames = [env.render()] if record else []
    total, steps = 0.0, 0
    while True:
        obs, reward, terminated, truncated, info = env.step(act(obs, env.unwrapped))
        total += float(reward)
        steps += 1
        if record:
            frames.append(env.render())
        if terminated or truncated:
            result = EpisodeResult(bool(terminated), float(info["coverage"]), steps, float(info["travel_distance"]), total,
                                   str(info["map_family"]), info["map_file"])
            return result, frames
