"""Lookahead on the true map: the cost of every move when greedy finishes the episode after it.

For a state s and a valid slot a, the *lookahead cost* is

.. math::

    C(s, a) = \\text{travel at the end of the episode if the robot takes } a \\text{ and greedy then plays to completion}

played in a copy of the env (``GridExploreEnv.lookahead_copy``), which holds the true map: the
cost is privileged, known to a planner that sees the map and never to the policy. Its argmin is
the move of the *oracle* (``greedy_lookahead_oracle``), the one-step policy improvement of greedy
with the map known, which travels about 0.84 of greedy's distance on procedural maps and on the
reference's floor plans (docs/results.md, section 2): the room above greedy.

Three users: ``experiments.headroom`` plays the oracle and the same lookahead in the robot's belief;
``LookaheadCosts`` reports C(s, .) for every state an env visits, and ``planner.imitation`` trains the
policy to take the moves C prices lowest. A cost plays some (valid moves) x (moves left) env steps,
fewer since the play-outs of a state's moves are joined where they meet (``travel_after``): about
13 ms a state on the floor plans of ``configs/dungeon.yaml`` (docs/performance.md).

Greedy is one continuation. Any other player of the observations can finish the episode instead
(a ``Continuation``: moves for a batch of observations), giving its own

.. math::

    C_\\pi(s, a) = \\text{travel at the end of the episode if the robot takes } a \\text{ and } \\pi \\text{ then plays to completion}

the true cost Q of the move under pi; its argmin is pi's one-step improvement, so labels priced
with the learner's own continuation make imitation a step of policy iteration instead of an
improvement on greedy alone. The copies of a state's valid moves play in lockstep, one batched
call of the continuation per step.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

from env.baselines import Policy, greedy_move
from env.greedy_value import PlanEndings, play_greedy, play_greedy_joining, remember
from env.grid_explore import GridExploreEnv
from env.observation import ACTION_MASK
from env.sensing import FREE, OCCUPIED, UNKNOWN
from planner.worlds import belief_world, imagined_world

Continuation = Callable[[dict[str, np.ndarray]], np.ndarray]
"""A player for play-outs: observations stacked along a first axis [B, ...] -> [B] slots, each a
pure function of its own observation."""

LOOKAHEAD_COSTS = "lookahead_costs"
"""The ``info`` key of C(s, .) for the state the env is in after this reset or step."""


def played_after(world: GridExploreEnv, slot: int) -> tuple[GridExploreEnv, bool]:
    """A copy of ``world`` in which the robot has taken ``slot`` and greedy has then played to the
    end (its ``path`` ends with the route travelled), and whether its episode terminated (else
    the step limit came first or it ended stuck). ``world`` is left as it was."""
    world = world.lookahead_copy()
    _, terminated = world.play(slot)
    if not terminated:  # a stuck copy ends its episode; past the step limit no moves are left
        _, _, terminated = play_greedy(world, world.config.max_steps - world.steps)
    return world, terminated


def travel_after(world: GridExploreEnv, slot: int, end_cost: np.ndarray | None = None,
                 endings: PlanEndings | None = None) -> float:
    """C(s, slot): the travel at the end of the episode if the robot takes ``slot`` in ``world``
    and then plays greedy (``played_after``); infinite if the step limit comes first. With
    ``end_cost`` ([H, W], unpadded; an ``EndPrice``'s), plus its value at the cell where the
    robot ends.

    With ``endings`` (shared by the slots of one state, ``lookahead_costs``), greedy plays until
    it reaches a state an earlier play-out passed through and that play-out's moves finish it
    (``env.greedy_value.play_greedy_joining``, as ``GreedyValue`` joins its plans), their travel
    added one by one as the play-out's own would be: the same C to the last bit, with fewer moves
    played (about half on the floor plans, where the play-outs of a state's moves mostly meet;
    docs/performance.md). This play-out's states are then added to ``endings``."""
    if endings is None:
        played, terminated = played_after(world, slot)
        travel, end_cell = played.travel_distance, tuple(played.graph.node_rc[played.robot_node])
    else:
        travel, terminated, end_cell = _played_joining(world, slot, endings)
    if not terminated:
        return float("inf")
    if end_cost is None:
        return travel
    return travel + float(end_cost[end_cell])


def _played_joining(world: GridExploreEnv, slot: int, endings: PlanEndings) -> tuple[float, bool, tuple[int, int]]:
    """``travel_after``'s play-out joined to ``endings``: (its whole travel, whether it terminated,
    the cell it ended on)."""
    world = world.lookahead_copy()
    _, terminated = world.play(slot)
    if world.episode_over:  # the slot's own move ended it
        return world.travel_distance, terminated, tuple(world.graph.node_rc[world.robot_node])
    travel = world.travel_distance
    plan = play_greedy_joining(world, world.config.max_steps - world.steps, endings)
    remember(endings, plan)
    for hop in plan.hops:  # the env's own sum, hop by hop, over the moves played and joined alike
        travel += hop
    return travel, plan.terminated, plan.end_cell


def travel_after_each(world: GridExploreEnv, slots: np.ndarray, continuation: Continuation) -> np.ndarray:
    """[len(slots)] C_pi(s, slot) for each of ``slots``: a copy of ``world`` per slot takes it, then
    ``continuation`` plays the copies still going, one batched call a step, until each has
    terminated (its travel), ended stuck or reached the step limit (infinite). ``world`` is left
    as it was."""
    costs = np.full(len(slots), np.inf)
    twins = [world.lookahead_copy() for _ in slots]
    playing, moves = list(range(len(slots))), slots  # the copies still going (positions in slots), their next moves
    while playing:
        still: list[tuple[int, dict]] = []
        for i, move in zip(playing, moves):
            obs, _, terminated, _, _ = twins[i].step(int(move))
            if terminated:
                costs[i] = twins[i].travel_distance
            elif not twins[i].episode_over and twins[i].steps < twins[i].config.max_steps:
                still.append((i, obs))
        playing = [i for i, _ in still]
        if still:
            moves = continuation({key: np.stack([obs[key] for _, obs in still]) for key in still[0][1]})
    return costs


def lookahead_costs(world: GridExploreEnv, action_mask: np.ndarray, continuation: Continuation | None = None,
                    end_cost: np.ndarray | None = None) -> np.ndarray:
    """[K] float32 C(s, k) for every slot k of the state ``world`` is in: ``travel_after`` (greedy
    finishes, with ``end_cost`` priced where it ends) or, given a ``continuation``,
    ``travel_after_each`` for a slot ``action_mask`` allows; infinite for one it does not."""
    if continuation is not None and end_cost is not None:
        raise ValueError("an end cost prices greedy's play-outs only, not a continuation's")
    costs = np.full(len(action_mask), np.inf, dtype=np.float32)
    slots = np.flatnonzero(action_mask)
    if continuation is not None:
        costs[slots] = travel_after_each(world, slots, continuation)
        return costs
    endings: PlanEndings = {}
    for slot in slots:
        costs[slot] = travel_after(world, int(slot), end_cost, endings)
    return costs


def greedy_lookahead(imagine: Callable[[GridExploreEnv], GridExploreEnv]) -> Policy:
    """The policy taking the valid move after which greedy finishes with the least travel in the
    world ``imagine(env)`` (ties: lowest slot)."""
    def act(obs: dict, env: gym.Env) -> int:
        return int(np.argmin(lookahead_costs(imagine(env.unwrapped), obs[ACTION_MASK])))
    return act


greedy_lookahead_oracle = greedy_lookahead(lambda env: env)
"""The oracle: looks ahead in the true world (``travel_after`` copies it)."""
belief_lookahead = greedy_lookahead(belief_world)
"""Looks ahead in what the robot knows, the unknown taken as walls."""


Guess = Callable[[GridExploreEnv], np.ndarray]
"""A map predictor: an env -> [H, W] bool, its guess of which cells are occupied, read from what
the robot knows (its belief and graph) and never from the true map."""

EndPrice = Callable[[GridExploreEnv], np.ndarray]
"""A price on where a play-out in a guessed world ends: an env -> [H, W] float, unpadded, the
cells of travel added to a play-out whose robot ends on each cell, read from what the robot knows."""


def imagined_costs(world: GridExploreEnv, guess: Guess, continuation: Continuation | None = None,
                   end_price: EndPrice | None = None, slots: np.ndarray | None = None) -> np.ndarray | None:
    """[K] C(s, k) of ``world``'s slots priced in the world ``guess`` imagines
    (``planner.worlds.imagined_world``): the imagined copy's own cost for the slot that
    leads to the same lattice point, less its hop and plus the real one; infinite for a slot
    with no such twin (masked, a lookout). None when the robot's node has no twin there. Greedy
    finishes the play-outs, or ``continuation`` (``lookahead_costs``); ``end_price``, read from
    ``world``, adds a price on where each of greedy's play-outs ends. With ``slots`` ([K] bool),
    only those slots are played out, the others infinite: each play-out is its own, so a slot's
    price does not depend on which others are priced."""
    imagined = imagined_world(world, guess(world))
    if imagined is None:
        return None
    end_cost = None if end_price is None else end_price(world)
    playable = imagined._action_mask()
    if slots is not None:
        playable = playable & np.asarray(slots, dtype=bool)
    costs = lookahead_costs(imagined, playable, continuation, end_cost)
    ours, theirs = world.graph, imagined.graph
    targets, twins = world.robot_neighbors(), imagined.robot_neighbors()
    priced = np.full(len(costs), np.inf)
    for slot in np.flatnonzero(world._action_mask() & np.isfinite(costs)):
        if slot and ours.lattice_of_node[targets[slot]] == theirs.lattice_of_node[twins[slot]]:
            priced[slot] = (costs[slot] - theirs.slot_length(imagined.robot_node, slot)
                            + ours.slot_length(world.robot_node, slot))
    return priced


def imagined_costs_of_valid(world: GridExploreEnv, guess: Guess, action_mask: np.ndarray,
                            continuation: Continuation | None = None, end_price: EndPrice | None = None
                            ) -> np.ndarray | None:
    """[K] ``imagined_costs`` of the slots ``action_mask`` allows (only those are played out),
    each one the imagined world does not price (a lookout, a node the guess has no twin for) at
    the dearest priced one, so that every allowed move has a cost; infinite for the other slots.
    None when the imagined world prices no allowed slot."""
    valid = np.asarray(action_mask).astype(bool)
    costs = imagined_costs(world, guess, continuation, end_price, slots=valid)
    if costs is None or not np.isfinite(costs[valid]).any():
        return None
    costs = np.where(valid, costs, np.inf)
    costs[valid & ~np.isfinite(costs)] = costs[np.isfinite(costs)].max()
    return costs


def guessed_lookahead(*guesses: Guess) -> Policy:
    """The move after which greedy finishes shortest in the worlds ``guesses`` imagine: each
    slot's ``imagined_costs`` averaged over the worlds that price it; greedy's own move where no
    world prices any slot. One guess: the lookahead in its world. Several (``revealed_within``
    with noise and different seeds, say): the move least costly in expectation over them, which
    one likeliest world does not weigh (docs/results.md, section 4)."""
    if not guesses:
        raise ValueError("guessed_lookahead needs at least one guess")

    def act(obs: dict, env: gym.Env) -> int:
        world = env.unwrapped
        priced = [costs for costs in (imagined_costs(world, guess) for guess in guesses) if costs is not None]
        if not priced:
            return greedy_move(world)
        costs = np.stack(priced)  # [worlds, K]
        finite = np.isfinite(costs)
        if not finite.any():
            return greedy_move(world)
        mean = np.where(finite, costs, 0.0).sum(axis=0) / np.maximum(finite.sum(axis=0), 1)
        return int(np.argmin(np.where(finite.any(axis=0), mean, np.inf)))
    return act


def within_steps(world: GridExploreEnv, distance: int) -> np.ndarray:
    """[H, W] bool, unpadded: the cells within ``distance`` steps (4-connected, through any
    cell) of a cell the robot knows free."""
    p = world.pad
    near = world.belief[p:-p, p:-p] == FREE
    for _ in range(distance):
        near = one_step_grown(near)
    return near


def one_step_grown(cells: np.ndarray) -> np.ndarray:
    """[H, W] bool: ``cells`` and their 4-connected neighbours."""
    grown = cells.copy()
    grown[1:] |= cells[:-1]
    grown[:-1] |= cells[1:]
    grown[:, 1:] |= cells[:, :-1]
    grown[:, :-1] |= cells[:, 1:]
    return grown


def steps_to(sources: np.ndarray, passable: np.ndarray) -> np.ndarray:
    """[H, W] float: the steps (4-connected, through ``passable`` cells) from each cell to the
    nearest of ``sources``; infinite where none is reachable."""
    steps = np.full(sources.shape, np.inf)
    front, step = sources.copy(), 0
    while front.any():
        steps[front] = step
        front = one_step_grown(front) & passable & np.isinf(steps)
        step += 1
    return steps


def far_unknown_price(weight: float, reach: int = 12) -> EndPrice:
    """``weight`` times the steps (through cells not known to be walls) from a cell to the nearest
    unknown cell more than ``reach`` steps past a known free cell (``within_steps``), where a map
    guess stops guessing; 0 where none is reachable. The guessed world ends a few cells past the
    known ones, so a play-out in it ends wherever the near clearing ends, and leaving a pocket for
    later looks cheap: this prices the way back to the rest of the map (docs/results.md section 6,
    v18 and v26)."""
    if not weight >= 0:
        raise ValueError(f"weight={weight}: cells of travel a step, 0 or more")
    if reach < 0:
        raise ValueError(f"reach={reach}: a number of steps, 0 or more")

    def price(world: GridExploreEnv) -> np.ndarray:
        p = world.pad
        belief = world.belief[p:-p, p:-p]
        far = (belief == UNKNOWN) & ~within_steps(world, reach)
        steps = steps_to(far, belief != OCCUPIED)
        return weight * np.where(np.isfinite(steps), steps, 0.0)

    return price


def revealed_within(distance: int, noise: float = 0.0, seed: int = 0) -> Guess:
    """A diagnostic guess that reads the true map: its cells ``within_steps`` ``distance`` of
    what the robot knows free, walls beyond. How far past what the robot has seen a planner
    needs to know the map (docs/results.md, section 4). With ``noise``, each unknown cell within
    that reach is guessed wrong (wall for free, free for wall) with that probability, drawn
    afresh at every step from ``seed`` and the step count: how exact the guess must be."""
    if not 0.0 <= noise <= 1.0:
        raise ValueError(f"noise={noise}: a probability, between 0 and 1")

    def guess(world: GridExploreEnv) -> np.ndarray:
        near = within_steps(world, distance)
        walls = ~near | world.grid_map.occupied
        if noise:
            p = world.pad
            unknown = near & (world.belief[p:-p, p:-p] == UNKNOWN)
            wrong = unknown & (np.random.default_rng([seed, world.steps]).random(unknown.shape) < noise)
            walls = walls ^ wrong
        return walls
    return guess


class LookaheadCosts(gym.Wrapper):
    """Adds ``info["lookahead_costs"]``, C(s, .) of the state after each reset and step ([K]
    float32, infinite for masked slots; all infinite once the episode is over), with greedy or
    ``continuation`` finishing the episode.

    With ``reveal`` D the costs are priced in the world that knows the true map only D steps
    past the cells the robot knows free (``revealed_within``: a less privileged teacher than the
    whole map), each valid move that world does not price at its dearest
    (``imagined_costs_of_valid``); all infinite where it prices none."""

    def __init__(self, env: gym.Env, continuation: Continuation | None = None, reveal: int | None = None):
        super().__init__(env)
        if reveal is not None and reveal < 0:
            raise ValueError(f"reveal={reveal}: a number of steps past the known free cells, 0 or more")
        self.continuation = continuation
        self.guess = None if reveal is None else revealed_within(reveal)

    def reset(self, **kwargs: Any):
        obs, info = self.env.reset(**kwargs)
        return obs, {**info, LOOKAHEAD_COSTS: self._costs(obs, over=False)}

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        return obs, reward, terminated, truncated, {**info, LOOKAHEAD_COSTS: self._costs(obs, terminated or truncated)}

    def _costs(self, obs: dict, over: bool) -> np.ndarray:
        unpriced = np.full(len(obs[ACTION_MASK]), np.inf, dtype=np.float32)
        if over:  # the final state: no move follows it
            return unpriced
        if self.guess is None:
            return lookahead_costs(self.env.unwrapped, obs[ACTION_MASK], self.continuation)
        costs = imagined_costs_of_valid(self.env.unwrapped, self.guess, obs[ACTION_MASK], self.continuation)
        return unpriced if costs is None else costs.astype(np.float32)
