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
A new play-out often walks into a state one of the episode's earlier plans passed through (the
same belief, node and graph: ``GridExploreEnv.state_key``); from there it would repeat that plan
move for move, so the wrapper takes that plan's rest instead of playing it
(``play_greedy_joining``). The plan, and so W, is the one a full play-out gives, only found sooner.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
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


@dataclass
class GreedyPlan:
    """Greedy's moves from a state to the end: ``actions``, their ``rewards`` and their travel
    (``hops``, each as the env adds it), ``keys`` the ``state_key`` before each move, and whether
    the plan ``ends`` the episode (terminated or stuck) rather than stopping at its move limit, so
    that its rest is whole wherever it is joined. A plan that ends also says whether it
    ``terminated`` (the map explored whole) and the cell its robot ends on (``end_cell``)."""
    actions: list[int] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    hops: list[float] = field(default_factory=list)
    keys: list[bytes] = field(default_factory=list)
    ends: bool = False
    terminated: bool = False
    end_cell: tuple[int, int] = (0, 0)

    def advance(self) -> None:
        """Drop the first move: the robot made it."""
        del self.actions[0], self.rewards[0], self.hops[0], self.keys[0]

    def rest(self, first: int, max_moves: int) -> "GreedyPlan":
        """The plan from its move ``first`` on, cut at ``max_moves`` moves (then it does not end)."""
        last = first + max_moves
        ends = self.ends and len(self.actions) <= last
        return GreedyPlan(self.actions[first:last], self.rewards[first:last], self.hops[first:last],
                          self.keys[first:last], ends, ends and self.terminated, self.end_cell)


PlanEndings = dict[bytes, tuple[GreedyPlan, int]]
"""Every state the whole plans of an episode (or of a lookahead's play-outs) passed through
(``state_key``): a copy of the plan and the index of the state's move in it. Any of them may be
joined: equal keys, equal futures."""


def remember(endings: PlanEndings, plan: GreedyPlan) -> None:
    """Add the states of ``plan`` to ``endings`` if the plan ends the episode (a copy of it: the
    plan itself shrinks as the robot follows it)."""
    if plan.ends:
        kept = plan.rest(0, len(plan.actions))
        for i, key in enumerate(kept.keys):
            endings.setdefault(key, (kept, i))


def play_greedy_joining(world: GridExploreEnv, max_moves: int, endings: PlanEndings) -> GreedyPlan:
    """``play_greedy``'s moves and rewards from ``world`` (mutated, its episode not over), as a
    plan: played until the state is one of ``endings`` (the states of whole plans of the same
    episode), whose plan's rest then follows, cut at ``max_moves`` moves from here as
    ``play_greedy`` would be. ``world`` is left where the playing stopped: at the join, the
    joined rest's moves are in the plan only."""
    plan = GreedyPlan()
    terminated = False
    while not world.episode_over and len(plan.actions) < max_moves:
        key = world.state_key()
        if key in endings:  # from here greedy repeats that plan, move for move
            earlier, joined = endings[key]
            rest = earlier.rest(joined, max_moves - len(plan.actions))
            return GreedyPlan(plan.actions + rest.actions, plan.rewards + rest.rewards, plan.hops + rest.hops,
                              plan.keys + rest.keys, rest.ends, rest.terminated, rest.end_cell)
        action = greedy_move(world)
        plan.hops.append(world.graph.slot_length(world.robot_node, action))
        reward, terminated = world.play(action)
        plan.actions.append(action)
        plan.rewards.append(float(reward))
        plan.keys.append(key)
    plan.ends, plan.terminated = world.episode_over, terminated
    plan.end_cell = tuple(int(v) for v in world.graph.node_rc[world.robot_node])
    return plan


class GreedyValue(gym.Wrapper):
    """Adds ``info["greedy_value"]``, W(s) of the state after each reset and step (module docstring).

    Greedy gets up to ``max_steps`` moves (the env's own limit) from every state; a state it
    cannot finish from in that many is worth what greedy collected until then. Such a plan, cut
    at its limit, is played anew after every step: its rest would be a move short.
    """

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self._plan = GreedyPlan()  # greedy's remaining plan from the current state
        self._endings: PlanEndings = {}  # the states of this episode's whole plans

    @property
    def greedy_value(self) -> float:
        """W(s) of the current state."""
        return math.fsum(self._plan.rewards)

    def reset(self, **kwargs: Any):
        obs, info = self.env.reset(**kwargs)
        self._endings = {}  # another episode: nothing of the last one's plans carries over
        self._replan()
        return obs, {**info, GREEDY_VALUE: self.greedy_value}

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        plan = self._plan
        on_plan = plan.actions and plan.actions[0] == int(action) and plan.rewards[0] == reward
        if terminated or info["stuck"]:  # nothing follows the end of exploration
            self._plan = GreedyPlan(ends=True)
        elif on_plan and plan.ends:  # the robot made greedy's move: the rest of a whole plan still holds
            plan.advance()
        else:
            self._replan()
        return obs, reward, terminated, truncated, {**info, GREEDY_VALUE: self.greedy_value}

    def _replan(self) -> None:
        world: GridExploreEnv = self.env.unwrapped
        self._plan = play_greedy_joining(world.lookahead_copy(), world.config.max_steps, self._endings)
        remember(self._endings, self._plan)
