"""Greedy's return from the robot's state, played out on the true map: a privileged value.

``GreedyValue`` wraps the env and puts ``info["greedy_value"]`` on every reset and step:

.. math::

    W(s) = \\sum_{t \\ge 0} r_t \\quad \\text{while the greedy baseline plays from } s \\text{ to the end}

(undiscounted, as the default ``gamma`` 1), computed by playing :func:`env.baselines.greedy` in a
copy of the env, which holds the true map. The policy never sees W; training may use it as the
state value in GAE (``ppo.gae_values: greedy_rollout``), as large-scale-DRL-exploration gives its
critic the ground truth. Both ends of a one-step difference ``r + W(s') - W(s)`` are played on
the same map, so the map's unknown part, the bulk of the noise a learned critic faces, cancels:
the difference is exactly 0 for greedy's own move and measures how much any other move gains or
loses against greedy on this map.

Greedy and the env are deterministic, so after greedy's first move W(s') is W(s) minus that
move's reward: the wrapper keeps greedy's plan and plays a new one only when the robot leaves it.
"""
from __future__ import annotations

import math
from typing import Any

import gymnasium as gym

from env.baselines import greedy_move
from env.grid_explore import GridExploreEnv

GREEDY_VALUE = "greedy_value"
"""The ``info`` key of W(s) for the state the env is in after this reset or step."""


def play_greedy(world: GridExploreEnv, max_moves: int) -> tuple[list[int], list[float], bool]:
    """Play greedy in ``world`` (mutating it) until the episode terminates (exploration complete),
    ends stuck (see the env's Termination) or ``max_moves`` moves.

    The episode's own step limit is ignored: the moves are counted from here. Returns greedy's
    actions, their rewards, and whether the episode terminated. Even a map the robot has already
    seen whole takes one move, which collects the completion bonus, as the env pays it. Moves go
    through ``GridExploreEnv.play``: no observation is built on the way.
    """
    actions: list[int] = []
    rewards: list[float] = []
    terminated = False
    while not world.episode_over and len(actions) < max_moves:
        action = greedy_move(world)
        reward, terminated = world.play(action)
        actions.append(action)
        rewards.append(float(reward))
    return actions, rewards, terminated


class GreedyValue(gym.Wrapper):
    """Adds ``info["greedy_value"]``, W(s) of the state after each reset and step (module docstring).

    Greedy gets up to ``max_steps`` moves (the env's own limit) from every state; a state it
    cannot finish from in that many is worth what greedy collected until then.
    """

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self._actions: list[int] = []  # greedy's remaining plan from the current state
        self._rewards: list[float] = []

    @property
    def greedy_value(self) -> float:
        """W(s) of the current state."""
        return math.fsum(self._rewards)

    def reset(self, **kwargs: Any):
        obs, info = self.env.reset(**kwargs)
        self._replan()
        return obs, {**info, GREEDY_VALUE: self.greedy_value}

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        on_plan = self._actions and self._actions[0] == int(action) and self._rewards[0] == reward
        if terminated or info["stuck"]:  # nothing follows the end of exploration
            self._actions, self._rewards = [], []
        elif on_plan:  # the robot made greedy's move: the rest of the plan still holds
            del self._actions[0], self._rewards[0]
        else:
            self._replan()
        return obs, reward, terminated, truncated, {**info, GREEDY_VALUE: self.greedy_value}

    def _replan(self) -> None:
        world: GridExploreEnv = self.env.unwrapped
        self._actions, self._rewards, _ = play_greedy(world.lookahead_copy(), world.config.max_steps)
