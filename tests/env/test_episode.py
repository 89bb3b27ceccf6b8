"""``run_episode`` and its ``CycleBreaker``: no player cycles an episode away, and a player that does
not cycle plays exactly as it would alone."""
import gymnasium as gym
import numpy as np
import pytest

import env  # noqa: F401  (registers the envs)
from env.baselines import greedy, nearest_frontier, random_valid
from env.episode import CycleBreaker, run_episode
from env.observation import ACTION_MASK, CURRENT_INDEX, NEIGHBORS
from env.sensing import UNKNOWN


def back_and_forth():
    """A player that goes round for good: from every node it returns to the node it came from
    (greedy's move only for the first step of an episode), so it walks A, B, A, B, ..."""
    came_from = {}

    def act(obs, world):
        here = int(world.robot_node)
        slots = np.flatnonzero(obs[ACTION_MASK])
        nodes = obs[NEIGHBORS][int(obs[CURRENT_INDEX])][slots]
        back = [slot for slot, node in zip(slots, nodes) if came_from.get("node") == int(node)]
        move = int(back[0]) if back else greedy(obs, world)
        came_from["node"] = here
        return move
    return act


def unbroken(env_, act, seed):
    """The episode as the player plays it alone: (moves, success)."""
    obs, _ = env_.reset(seed=seed)
    moves = []
    while True:
        moves.append(act(obs, env_.unwrapped))
        obs, _, terminated, truncated, _ = env_.step(moves[-1])
        if terminated or truncated:
            return moves, bool(terminated)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_player_that_goes_round_for_good_finishes_the_map(seed):
    env_ = gym.make("GridExplore-Rooms-v0", map_size=20, max_steps=400)
    alone, finished_alone = unbroken(env_, back_and_forth(), seed)
    assert not finished_alone and len(alone) == 400  # it went round until the step limit
    result, _ = run_episode(env_, back_and_forth(), seed)
    assert result.success and result.coverage >= 0.99 and result.steps < 400
    assert result.cycles_broken > 0


@pytest.mark.parametrize("player", [greedy, nearest_frontier])
def test_a_player_that_never_comes_back_to_a_state_plays_as_alone(player):
    env_ = gym.make("GridExplore-v0", map_size=24)
    for seed in range(6):
        alone, finished = unbroken(env_, player, seed)
        played = []
        result, _ = run_episode(env_, lambda obs, world: played.append(player(obs, world)) or played[-1], seed)
        assert finished and result.success and result.cycles_broken == 0
        assert len(played) == len(alone) == result.steps and played == alone


def test_the_random_player_draws_as_alone():
    """A player that draws its moves meets states again and repeats moves by chance, and is not
    going round: it plays without the rule, move for move as alone (the same draws of the env's
    generator), its failures its own."""
    env_ = gym.make("GridExplore-v0", map_size=24, max_steps=60)
    unfinished = 0
    for seed in range(6):
        alone, finished = unbroken(env_, random_valid, seed)
        result, _ = run_episode(env_, random_valid, seed)
        assert result.steps == len(alone) and result.success == finished and result.cycles_broken == 0
        unfinished += not finished
    assert unfinished > 0  # with the rule, greedy would have finished them


def test_greedy_leads_from_an_exact_state_met_again_until_a_cell_is_newly_seen():
    env_ = gym.make("GridExplore-v0", map_size=24)
    obs, _ = env_.reset(seed=5)
    world, breaker = env_.unwrapped, CycleBreaker()
    valid = [int(slot) for slot in np.flatnonzero(obs[ACTION_MASK])]
    first = next(slot for slot in valid if slot != greedy(obs, world))
    assert breaker.move(obs, world, first) == first  # the first time: as proposed
    other = {**obs, ACTION_MASK: obs[ACTION_MASK].copy()}
    other[ACTION_MASK][first] = not other[ACTION_MASK][first]  # another observation: another state
    assert breaker.move(other, world, first) == first
    assert (breaker.broken, breaker.moves) == (0, 0)
    assert breaker.move(obs, world, first) == greedy(obs, world)  # again, the same move: greedy's
    assert breaker.move(other, world, first) == greedy(other, world)  # and greedy leads on, nothing new seen
    assert (breaker.broken, breaker.moves) == (1, 2)
    obs, *_ = env_.step(greedy(obs, world))
    while np.count_nonzero(world.belief != UNKNOWN) <= breaker.greedy_until:
        assert breaker.move(obs, world, valid[0]) == greedy(obs, world)
        obs, *_ = env_.step(greedy(obs, world))
    proposed = next(int(slot) for slot in np.flatnonzero(obs[ACTION_MASK]))
    assert breaker.move(obs, world, proposed) == proposed  # a cell newly seen: the player again
    assert breaker.greedy_until is None and breaker.broken == 1
