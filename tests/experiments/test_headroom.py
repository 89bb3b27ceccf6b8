"""The lookaheads of experiments/headroom.py: the oracle never travels more than greedy, the policy it
rolls out; the belief lookahead, which cannot know the map, still completes it."""
import gymnasium as gym
import numpy as np
import pytest

import env  # noqa: F401  (registers the envs)
from env.baselines import greedy
from env.episode import run_episode
from env.observation import ACTION_MASK
from planner.lookahead import belief_lookahead, greedy_lookahead_oracle, played_after, travel_after


@pytest.mark.parametrize("seed", [1, 3, 5])
def test_oracle_finishes_no_longer_than_greedy(seed):
    # A rollout of a fixed policy in a deterministic world can only improve on it (Bertsekas's
    # rollout algorithms): at worst it takes greedy's own move at every step.
    maps = gym.make("GridExplore-v0", map_size=16, max_steps=80)
    oracle, _ = run_episode(maps, greedy_lookahead_oracle, seed)
    base, _ = run_episode(maps, greedy, seed)
    assert oracle.success and base.success
    assert oracle.travel_distance <= base.travel_distance


@pytest.mark.parametrize("seed", [1, 3])
def test_belief_lookahead_completes_the_map(seed):
    maps = gym.make("GridExplore-v0", map_size=16, max_steps=80)
    result, _ = run_episode(maps, belief_lookahead, seed)
    assert result.success and result.coverage == 1.0 and result.travel_distance > 0



@pytest.mark.parametrize("seed", [2, 4])
def test_played_after_is_the_move_then_greedy_played_through_step(seed):
    """``played_after``'s copy ends where the real env ends when it takes the same move and then
    greedy's through ``step`` (observations built, not ``play``): the same route cell by cell and
    the same travel, ``travel_after``'s C; the world it copied is left as it was."""
    world = gym.make("GridExplore-v0", map_size=16, max_steps=80)
    obs, _ = world.reset(seed=seed)
    obs, *_ = world.step(greedy(obs, world))  # a state past the start
    real = world.unwrapped
    slot = int(np.flatnonzero(obs[ACTION_MASK])[-1])  # not necessarily greedy's move
    before = (list(real.path), real.travel_distance, real.steps)
    played, terminated = played_after(real, slot)
    cost = travel_after(real, slot)
    assert (list(real.path), real.travel_distance, real.steps) == before
    obs, _, over, truncated, _ = world.step(slot)
    while not (over or truncated):
        obs, _, over, truncated, _ = world.step(greedy(obs, world))
    assert terminated and over
    assert played.path == real.path and len(played.path) > len(before[0])
    assert played.travel_distance == pytest.approx(real.travel_distance) and cost == played.travel_distance
