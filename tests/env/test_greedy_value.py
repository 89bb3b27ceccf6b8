"""W(s), greedy's return from each state on the true map (env/greedy_value.py), against greedy
played out by hand in plain deep copies of the env."""
import copy

import gymnasium as gym
import numpy as np
import pytest

import env.greedy_value as greedy_value_module
from env.baselines import greedy
from env.greedy_value import GREEDY_VALUE, GreedyValue
from env.observation import ACTION_MASK
from tests.helpers import greedy_return_by_hand


def make():
    return GreedyValue(gym.make("GridExplore-v0", map_size=20, max_steps=60))


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_greedy_value_matches_greedy_played_by_hand_at_every_state(seed):
    env, rng = make(), np.random.default_rng(seed)
    obs, info = env.reset(seed=seed)
    values = [info[GREEDY_VALUE]]
    assert info[GREEDY_VALUE] == pytest.approx(greedy_return_by_hand(env, obs), abs=1e-9)
    while True:
        # Greedy's move half of the time (the plan is kept), a random one otherwise (a new plan).
        valid = np.flatnonzero(obs[ACTION_MASK])
        action = greedy(obs, env.unwrapped) if rng.random() < 0.5 else int(rng.choice(valid))
        obs, _, terminated, truncated, info = env.step(action)
        values.append(info[GREEDY_VALUE])
        assert info[GREEDY_VALUE] == pytest.approx(greedy_return_by_hand(env, obs, terminated), abs=1e-9)
        if terminated or truncated:
            break
    assert len(set(values)) > 2  # the values do change along the episode


@pytest.mark.parametrize("seed", [5, 6])
def test_following_greedy_gives_zero_one_step_advantage(seed):
    """r + W(s') - W(s) is 0 for greedy's own move, and W(start) is greedy's episode return."""
    env = make()
    obs, info = env.reset(seed=seed)
    start_value, episode_return = info[GREEDY_VALUE], 0.0
    while True:
        value = info[GREEDY_VALUE]
        obs, reward, terminated, truncated, info = env.step(greedy(obs, env.unwrapped))
        episode_return += reward
        assert reward + info[GREEDY_VALUE] - value == pytest.approx(0.0, abs=1e-9)
        if terminated or truncated:
            break
    assert terminated
    assert start_value == pytest.approx(episode_return, abs=1e-9)


def test_another_move_than_greedys_changes_the_one_step_advantage():
    env = make()
    obs, info = env.reset(seed=4)
    advantages = {}
    for slot in np.flatnonzero(obs[ACTION_MASK]):
        twin = copy.deepcopy(env)
        _, reward, _, _, after = twin.step(int(slot))
        advantages[int(slot)] = reward + after[GREEDY_VALUE] - info[GREEDY_VALUE]
    assert advantages.pop(greedy(obs, env.unwrapped)) == pytest.approx(0.0, abs=1e-9)
    assert min(advantages.values()) < -0.01  # some other move is worse than greedy's on this map


def test_greedy_plays_out_again_only_when_the_robot_leaves_its_plan(monkeypatch):
    calls = []
    original = greedy_value_module.play_greedy
    monkeypatch.setattr(greedy_value_module, "play_greedy", lambda *a: calls.append(1) or original(*a))
    env = make()
    obs, _ = env.reset(seed=1)
    assert len(calls) == 1 and len(env._actions) > 4
    for _ in range(3):
        obs, *_ = env.step(greedy(obs, env.unwrapped))
    assert len(calls) == 1  # greedy's own moves: the plan holds
    valid = np.flatnonzero(obs[ACTION_MASK])
    off_plan = next(int(s) for s in valid if s != greedy(obs, env.unwrapped))
    env.step(off_plan)
    assert len(calls) == 2
