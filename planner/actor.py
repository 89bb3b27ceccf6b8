"""The planner: the trained agent planning in the map predictor's guess of the unseen map.

    from planner.actor import planner_actor
    act = planner_actor(policy, read_planner(Path("pretrained/dungeon.pt")))   # act(obs, env) -> move

A lookahead that knows the true map a few cells past what the robot has seen travels much less
than greedy (docs/results.md, section 4); the robot does not know those cells, so the planner
guesses them. Each move:

1. **guess** (``predicted_guess``): the predictor (``predictor.MapPredictor``, trained by
   ``planner.train_predictor``) reads the robot's belief and calls an unknown cell a wall where its
   probability of one exceeds ``threshold``; with ``opening`` w, an unknown cell guessed free
   that lies in no all-free w x w square of the guessed world is a wall too, since the floor
   plans have no narrower passage (``in_free_squares``);
2. **price** (``planner.lookahead.imagined_costs``): every valid move a is played in a copy of the
   env set in the guessed world, with greedy finishing: C(s, a), the travel to explore that world
   whole after a;
3. **choose** (``planning_actor``): the move minimising C(s, a) / spacing - W log pi(a | s), the
   guessed world's price against the agent's own preference (W = 0: the lookahead alone; a large
   W: the agent alone). Back on a node where it chose before, with nothing new seen since, it
   would choose as before and go round for good, so there it takes greedy's move instead
   (``env.baselines.greedy_on_return``). ``pretrained/dungeon.pt``
   carries its predictor, W = 0.25 and w = 4, ``pretrained/default.pt`` its own (procedural
   maps), W = 0.25 and no opening (``planner.files.Planner``; ``planner_actor`` plays it).

The planner reads the belief, the graph and the policy's observation only, never the true map
(``told``, a diagnostic of ``experiments.predicted_lookahead``, is the one exception, and says so).
"""
from __future__ import annotations

import functools
from collections.abc import Callable

import gymnasium as gym
import numpy as np
import torch

from env.baselines import greedy_on_return
from env.context import summed_area
from env.episode import Actor
from env.grid_explore import GridExploreEnv
from env.observation import ACTION_MASK
from env.sensing import FREE, UNKNOWN
from graph_batch import forward_each, one_torch_thread
from planner.files import Planner
from planner.lookahead import EndPrice, Guess, imagined_costs_of_valid, within_steps
from planner.predictor import MapPredictor
from planner.predictor_files import predictor_file, predictor_from_state
from policy import PolicyNet


def in_free_squares(free: np.ndarray, width: int) -> np.ndarray:
    """[H, W] bool: the cells of ``free`` [H, W] that lie in some ``width`` x ``width`` square of
    free cells (a morphological opening of the free space by that square)."""
    height, breadth = free.shape
    if height < width or breadth < width:
        return np.zeros_like(free)
    squares = window_sums(free, width) == width * width  # [H-w+1, W-w+1]: the square at (r, c) is all free
    return window_sums(np.pad(squares, width - 1), width) > 0


def window_sums(mask: np.ndarray, width: int) -> np.ndarray:
    """[H-w+1, W-w+1] the count of True cells of ``mask`` in each ``width`` x ``width`` square,
    indexed by its top-left cell (``env.context.summed_area``)."""
    table = summed_area(mask)
    return table[width:, width:] - table[:-width, width:] - table[width:, :-width] + table[:-width, :-width]


Told = Callable[[GridExploreEnv, np.ndarray], np.ndarray]
"""A diagnostic's choice of cells: (env, [H, W] the predictor's wall probabilities) -> [H, W] bool,
the unknown cells on which ``predicted_guess`` takes the true map instead of its guess."""


def predicted_guess(net: MapPredictor, threshold: float = 0.5, within: int | None = None,
                    opening: int | None = None, told: Told | None = None) -> Guess:
    """The ``Guess`` of ``net``: a cell is a wall where its probability of one exceeds
    ``threshold`` and, with ``within``, wherever it lies further than ``within`` steps from a
    cell the robot knows free (``planner.lookahead.within_steps``). With ``opening`` w, an unknown
    cell guessed free that lies in no all-free w x w square of the guessed world (the known cells
    as the robot knows them) is a wall too: on the reference's floor plans at
    ``configs/dungeon.yaml``'s scale every free cell lies in an all-free 4 x 4 square
    (docs/results.md section 5, v14), so a narrower free sliver is a wrong guess. It reads the
    belief only, except with ``told``: a diagnostic (``experiments.predicted_lookahead --told``) that
    sets the unknown cells ``told`` picks from the true map before the opening, to ask how much
    a predictor right on those cells would gain."""
    if not 0 < threshold < 1:
        raise ValueError(f"threshold={threshold}: a probability strictly between 0 and 1")
    if within is not None and within < 0:
        raise ValueError(f"within={within}: a number of steps, 0 or more")
    if opening is not None and opening < 1:
        raise ValueError(f"opening={opening}: the side of a square of free cells, 1 or more")
    logit = float(np.log(threshold / (1 - threshold)))

    def guess(world: GridExploreEnv) -> np.ndarray:
        p = world.pad
        belief = world.belief[p:-p, p:-p]
        with torch.no_grad(), one_torch_thread():  # the same bits in any process, as forward_each's
            logits = net(torch.from_numpy(belief[None].copy()))[0]
        walls = (logits > logit).numpy()
        if within is not None:
            walls |= ~within_steps(world, within)
        unknown = belief == UNKNOWN
        if told is not None:
            truth = unknown & told(world, torch.sigmoid(logits).numpy())
            walls = np.where(truth, world.grid_map.occupied, walls)
        if opening is not None:
            walls |= unknown & ~in_free_squares(np.where(unknown, ~walls, belief == FREE), opening)
        return walls

    return guess


def planning_actor(policy: PolicyNet, guess: Guess, prior_weight: float, end_price: EndPrice | None = None,
                   candidates: int | None = None) -> Actor:
    """The move that minimises C(s, a) / spacing - ``prior_weight`` * log pi(a | s): the
    lookahead's cost in the world ``guess`` imagines (``planner.lookahead.imagined_costs``, with
    ``end_price`` on where each play-out ends), in node spacings, against the policy's own
    preference. A valid move the guessed world has no twin for is priced as its dearest one;
    where it prices none, the policy's argmax. ``prior_weight`` 0 is the lookahead alone, a
    large one the policy alone. With ``candidates`` k, only the policy's k likeliest valid moves
    are priced and chosen from (ties: the lower slot), each at the same score as among all: 1 is
    the policy's argmax, k >= the valid moves the full planner. Back on a node where it chose
    earlier in the episode with no cell seen since, it takes greedy's move
    (``env.baselines.greedy_on_return``)."""
    if candidates is not None and candidates < 1:
        raise ValueError(f"candidates={candidates}: how many of the policy's likeliest moves to price, 1 or more")

    def act(obs: dict, env: gym.Env) -> int:
        world = env.unwrapped
        with torch.no_grad():
            logits, _ = forward_each(policy, {key: np.asarray(value)[None] for key, value in obs.items()})
        log_pi = torch.log_softmax(logits[0], dim=-1).numpy()  # [K]
        moves = np.asarray(obs[ACTION_MASK]).astype(bool)  # [K] the moves priced and chosen from
        if candidates is not None and moves.sum() > candidates:
            valid = np.flatnonzero(moves)
            moves[valid[np.argsort(-log_pi[valid], kind="stable")[candidates:]]] = False
        considered = np.flatnonzero(moves)
        costs = imagined_costs_of_valid(world, guess, moves, end_price=end_price)
        if costs is None:
            return int(considered[np.argmax(log_pi[considered])])
        return int(considered[np.argmin(costs[considered] / world.config.node_spacing
                                        - prior_weight * log_pi[considered])])
    return greedy_on_return(act)


def planner_actor(policy: PolicyNet, planner: Planner) -> Actor:
    """``planning_actor`` with what a pretrained file's planner carries (``planner.files.Planner``):
    its predictor's guess, opened as it says, and its prior weight."""
    return planning_actor(policy, predicted_guess(planner.predictor, opening=planner.opening), planner.prior_weight)


def portable_planner(planner: Planner) -> Callable[[PolicyNet], Actor]:
    """``planner_actor`` for a policy given later, in a form that travels light to another process
    (``cluster.parallel_evaluation``): the predictor as its file's content, rebuilt on arrival."""
    return functools.partial(_planner_from_file, predictor_file(planner.predictor, {}), planner._replace(predictor=None))


def _planner_from_file(predictor: dict, settings: Planner, policy: PolicyNet) -> Actor:
    return planner_actor(policy, settings._replace(predictor=predictor_from_state(predictor, "the planner")))
