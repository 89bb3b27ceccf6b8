"""One whole episode with any player: the signature every player shares, what an episode ends
with, and the rule that no player cycles an episode away.

A player (``Actor``) is the trained policy (``graph_batch.argmax_actor``), a baseline
(``env.baselines``) or the planner; the trainer's image episode, the evaluation and the
pictures all play through ``run_episode``, and so under ``CycleBreaker``.
"""
from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

import gymnasium as gym
import numpy as np

from env.baselines import greedy, known_cells

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
    cycles_broken: int = 0
    """Cycles ``CycleBreaker`` broke: 0 unless the player came back to an exact state and would
    have left it as before (and in reports written before the rule)."""


class CycleBreaker:
    """No player cycles an episode away: met again in an exact state, greedy leads until something new is seen.

    A deterministic player (the agent's argmax, a baseline, the planner) that meets a state and an
    observation it has met before in the episode takes the move it took then, and everything
    after repeats: it goes round until the step limit (docs/environment.md, "No player cycles").
    Here a state is the env's ``state_key()`` (belief, robot node, graph) and the observation
    (which adds the visited flags), whose pair fixes every later step given the moves. When the
    player proposes, in such a state, a move it already took from it, greedy's moves replace the
    player's until a cell is newly seen (greedy leads to a frontier, as it does on every map),
    and the player plays on from there. Nowhere else is a move changed: a player that never comes
    back to an exact state with the same move plays exactly as it would alone. ``broken`` counts
    the cycles broken, ``moves`` the moves greedy made in the player's place.
    """

    def __init__(self) -> None:
        self.taken: dict[bytes, set[int]] = {}
        self.broken = self.moves = 0
        self.greedy_until: int | None = None  # while set: the known cells greedy leads until there are more

    def move(self, obs: dict, world: gym.Env, proposed: int) -> int:
        """The move to make in ``world`` (unwrapped) at ``obs``, where the player proposes ``proposed``."""
        if self.greedy_until is not None and known_cells(world) > self.greedy_until:
            self.greedy_until = None  # something new is seen: the player again
        state = hashlib.sha256(world.state_key())
        for key in sorted(obs):
            state.update(np.ascontiguousarray(obs[key]).tobytes())
        taken = self.taken.setdefault(state.digest(), set())
        if self.greedy_until is None and proposed in taken:  # this exact state again, and the same move
            self.greedy_until, self.broken = known_cells(world), self.broken + 1
        if self.greedy_until is not None:
            proposed = greedy(obs, world)
            self.moves += 1
        taken.add(proposed)
        return proposed


def run_episode(env: gym.Env, act: Actor, seed: int, record: bool = False, options: dict | None = None
                ) -> tuple[EpisodeResult, list[np.ndarray]]:
    """One episode from ``env.reset(seed=seed, options=options)``, ``act``'s moves passed through a
    ``CycleBreaker`` (an env without ``state_key``, or a player marked ``draws_at_random``, such
    as the random baseline, plays them as they are: a player that draws its moves does not go
    round); with ``record`` also its rendered frames."""
    obs, info = env.reset(seed=seed, options=options)
    frames = [env.render()] if record else []
    total, steps = 0.0, 0
    breaker = (CycleBreaker() if hasattr(env.unwrapped, "state_key") and not getattr(act, "draws_at_random", False)
               else None)
    while True:
        move = act(obs, env.unwrapped)
        if breaker is not None:
            move = breaker.move(obs, env.unwrapped, move)
        obs, reward, terminated, truncated, info = env.step(move)
        total += float(reward)
        steps += 1
        if record:
            frames.append(env.render())
        if terminated or truncated:
            result = EpisodeResult(bool(terminated), float(info["coverage"]), steps, float(info["travel_distance"]), total,
                                   str(info["map_family"]), info["map_file"], 0 if breaker is None else breaker.broken)
            return result, frames
