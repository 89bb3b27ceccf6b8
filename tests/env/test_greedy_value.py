"""W(s), greedy's return from each state on the true map (env/greedy_value.py), against greedy
played out by hand in plain deep copies of the env."""
import copy
import math

import gymnasium as gym
import numpy as np
import pytest

import env.greedy_value as greedy_value_module
from env.baselines import greedy
from env.greedy_value import GREEDY_VALUE, GreedyValue, play_greedy, play_greedy_joining, remember
from env.observation import ACTION_MASK
from run.seeding import eval_episode_seed
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
    original = greedy_value_module.play_greedy_joining
    monkeypatch.setattr(greedy_value_module, "play_greedy_joining", lambda *a: calls.append(1) or original(*a))
    env = make()
    obs, _ = env.reset(seed=1)
    assert len(calls) == 1 and len(env._plan.actions) > 4
    for _ in range(3):
        obs, *_ = env.step(greedy(obs, env.unwrapped))
    assert len(calls) == 1  # greedy's own moves: the plan holds
    valid = np.flatnonzero(obs[ACTION_MASK])
    off_plan = next(int(s) for s in valid if s != greedy(obs, env.unwrapped))
    env.step(off_plan)
    assert len(calls) == 2


def reset_on(kind: str, seed: int, max_steps: int) -> tuple[GreedyValue, dict]:
    """An env reset on a map whose graph takes approach nodes and lookouts, and its observation:
    a held-out 16 x 16 map of ``tests/env/test_state_key.py``'s (``lookout``) or 32 x 32 caves."""
    if kind == "lookout":
        env = GreedyValue(gym.make("GridExplore-v0", map_size=16, max_steps=max_steps))
        return env, env.reset(seed=eval_episode_seed(900007, seed))[0]
    env = GreedyValue(gym.make("GridExplore-v0", map_size=32, map_family="caves", max_steps=max_steps))
    return env, env.reset(seed=seed)[0]


@pytest.mark.parametrize("kind, seed, max_steps", [("lookout", 10, 256), ("lookout", 288, 256),
                                                   ("caves", 30, 200), ("caves", 31, 25)])
def test_joined_plans_are_greedys_full_play_outs(kind, seed, max_steps, monkeypatch):
    """Random moves, so a new plan nearly every step: after each step the kept plan is the one a
    full play-out from that state gives, move for move. With room for whole plans, most of the
    moves are joined to one of the episode's earlier plans, not played; with 25 steps on 32 x 32 caves most plans stop at their move
    limit, and such a plan, not whole, is neither joined nor followed (either way a plan here
    would come out short)."""
    played, replans = [], []
    greedy_move, joining = greedy_value_module.greedy_move, greedy_value_module.play_greedy_joining
    monkeypatch.setattr(greedy_value_module, "greedy_move", lambda world: played.append(1) or greedy_move(world))
    monkeypatch.setattr(greedy_value_module, "play_greedy_joining", lambda *a: replans.append(1) or joining(*a))
    (env, obs), rng = reset_on(kind, seed, max_steps), np.random.default_rng(seed)
    world = env.unwrapped
    moves_played = moves_in_full = cut = 0
    for step in range(100):
        before, replanned = len(played), len(replans)
        obs, _, terminated, truncated, info = env.step(int(rng.choice(np.flatnonzero(obs[ACTION_MASK]))))
        moves_played += len(played) - before
        actions, rewards, _ = play_greedy(world.lookahead_copy(), max_steps)
        if len(replans) > replanned:
            moves_in_full += len(actions)
        assert env._plan.actions == actions and env._plan.rewards == rewards, step
        assert info[GREEDY_VALUE] == math.fsum(rewards)
        cut += len(actions) == max_steps
        if terminated or truncated:
            obs, info = env.reset(seed=step)
    assert moves_in_full > 400
    if max_steps > 25:
        assert moves_played < 0.33 * moves_in_full and not cut  # joining the last plan only: 0.38-0.49
    else:
        assert cut > 50


def test_a_plan_that_ends_is_joined_where_the_state_is_one_it_passes_through(monkeypatch):
    env, _ = reset_on("caves", 30, 200)
    earlier = env._plan
    assert earlier.ends and len(earlier.actions) > 10
    world = env.unwrapped.lookahead_copy()
    for action in earlier.actions[:3]:
        world.play(action)
    endings = {}
    remember(endings, earlier)
    monkeypatch.setattr(greedy_value_module, "greedy_move", None)  # joined at once: greedy never asked
    joined = play_greedy_joining(world.lookahead_copy(), 200, endings)
    assert joined.actions == earlier.actions[3:] and joined.rewards == earlier.rewards[3:]
    assert joined.keys == earlier.keys[3:] and joined.hops == earlier.hops[3:] and joined.ends
    replay, travel = env.unwrapped.lookahead_copy(), env.unwrapped.travel_distance  # the plan's moves, played
    for action, hop in zip(earlier.actions, earlier.hops):
        replay.play(action)
        travel += hop
    assert replay.travel_distance == travel and replay.episode_over and not replay.stuck  # the env's own sum
    assert joined.terminated and joined.end_cell == earlier.end_cell == tuple(replay.graph.node_rc[replay.robot_node])
    cut = play_greedy_joining(world.lookahead_copy(), 4, endings)  # the same rest, cut at 4 moves
    assert cut.actions == earlier.actions[3:7] and cut.hops == earlier.hops[3:7] and not (cut.ends or cut.terminated)


def test_a_plan_cut_at_its_move_limit_is_not_joined():
    env, _ = reset_on("caves", 30, 200)
    world = env.unwrapped
    cut = play_greedy_joining(world.lookahead_copy(), 5, {})
    assert len(cut.actions) == 5 and not cut.ends
    endings = {}
    remember(endings, cut)
    assert not endings  # its rest is not whole: no state of it may be joined
    again = play_greedy_joining(world.lookahead_copy(), 200, endings)
    actions, rewards, _ = play_greedy(world.lookahead_copy(), 200)
    assert again.actions == actions and again.rewards == rewards and len(actions) > 5
