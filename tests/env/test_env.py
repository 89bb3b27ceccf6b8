import copy
import re

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import example, given, settings
from hypothesis import strategies as st

import env as env_package
from env.baselines import greedy
from env.grid_explore import GridExploreEnv
from env.maps import MAP_FAMILIES
from env.observation import ACTION_MASK, CURRENT_INDEX, N_NODE_FEATURES, NEIGHBORS, NODE_FEATURES, NODE_MASK
from env.reward import COMPLETION_BONUS, INVALID_ACTION_PENALTY, step_reward
from tests.helpers import hop_length_by_hand, mid_episode, random_valid_action

ENV_IDS = sorted(env_package.ENV_IDS)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_check_env_passes(env_id):
    check_env(gym.make(env_id, render_mode="rgb_array").unwrapped)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_same_seed_same_episode_step_for_step(env_id):
    def rollout():
        env = gym.make(env_id, map_size=24, max_steps=40)
        obs, _ = env.reset(seed=11)
        rng = np.random.default_rng(0)
        trace = [obs]
        for _ in range(40):
            obs, reward, terminated, truncated, info = env.step(random_valid_action(obs, rng))
            trace += [obs, reward, info["coverage"], info["travel_distance"]]
            if terminated or truncated:
                break
        return trace

    for a, b in zip(rollout(), rollout(), strict=True):
        if isinstance(a, dict):
            assert all(np.array_equal(a[key], b[key]) for key in a)
        else:
            assert a == b


@pytest.mark.parametrize("duplicate", [copy.deepcopy, GridExploreEnv.lookahead_copy])
def test_a_copy_plays_the_same_episode_without_touching_the_original(duplicate):
    """What lookahead planners do: copy the env mid-episode and play the copy forward."""
    env, obs = mid_episode(max_steps=60)
    twin = duplicate(env)
    belief_before, coverage_before = env.belief.copy(), env.known_free / env.reachable_free

    def play(e, seed):
        o, r = obs, np.random.default_rng(seed)
        trace = []
        while True:
            o, reward, terminated, truncated, info = e.step(random_valid_action(o, r))
            trace.append((o[NODE_FEATURES].tobytes(), o[NEIGHBORS].tobytes(), reward, info["coverage"]))
            if terminated or truncated:
                return trace

    twin_trace = play(twin, seed=1)
    assert np.array_equal(env.belief, belief_before)  # the original saw nothing of the copy's moves
    assert play(env, seed=1) == twin_trace
    assert twin_trace[-1][3] > coverage_before + 0.1  # the copy really explored, with its own belief


def test_play_moves_the_env_as_step_does_without_an_observation():
    """Play-outs move copies with ``play``: the same world, rewards and ending as ``step``."""
    env, obs = mid_episode(max_steps=60)
    stepped, played = env.lookahead_copy(), env.lookahead_copy()
    rng, o, built = np.random.default_rng(4), obs, []
    build = played._observation
    played._observation = lambda: built.append(1) or build()
    while True:
        assert np.array_equal(played.robot_neighbors(), o[NEIGHBORS][int(o[CURRENT_INDEX])])
        action = random_valid_action(o, rng)
        o, reward, terminated, truncated, _ = stepped.step(action)
        assert played.play(action) == (reward, terminated)
        assert (played.robot_node, played.travel_distance, played.steps, played.episode_over) == \
               (stepped.robot_node, stepped.travel_distance, stepped.steps, stepped.episode_over)
        assert np.array_equal(played.belief, stepped.belief) and np.array_equal(played.graph.utility, stepped.graph.utility)
        if terminated or truncated:
            break
    assert not built  # no observation was built on the way
    assert stepped.steps > 10


def test_make_accepts_keyword_overrides():
    env = gym.make("GridExplore-Caves-v0", map_size=24, sensor_range=4, utility_range=3,
                   node_spacing=3, k=5, n_max=90, max_steps=7)
    obs, _ = env.reset(seed=0)
    assert obs[NODE_FEATURES].shape == (90, N_NODE_FEATURES) and obs[NEIGHBORS].shape == (90, 5)
    assert env.action_space.n == 5 and env.unwrapped.map_family == "caves"
    for step in range(7):
        obs, _, terminated, truncated, _ = env.step(0)
    assert truncated and not terminated


@pytest.mark.parametrize("size, expected", [(40, 100 + 6), (16, 16 + 4), (80, 400 + 25)])
def test_default_n_max_is_the_lattice_capacity_and_room_for_lookouts(size, expected):
    assert GridExploreEnv(map_size=size).n_max == expected


@pytest.mark.parametrize("kwargs, message", [
    ({"map_famliy": "rooms"}, r"unknown GridExplore parameter\(s\) \['map_famliy'\]"),
    ({"map_family": "lava"}, "map_family='lava' is not one of"),
    ({"sensor_range": 0}, "sensor_range must be an int >= 1, got 0"),
    ({"sensor_range": 3, "utility_range": 5}, "utility_range must be <= sensor_range=3, got 5"),
    ({"map_size": 8}, "map_size must be an int >= 12, got 8"),
    ({"render_mode": "human"}, "render_mode='human'"),
])
def test_bad_parameters_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        GridExploreEnv(**kwargs)


def _masked_slot(obs) -> int:
    return int(np.flatnonzero(obs[ACTION_MASK] == 0)[0])


def _env_with_masked_slot(**kwargs):
    for seed in range(50):
        env = GridExploreEnv(map_family="maze", map_size=24, **kwargs)
        obs, _ = env.reset(seed=seed)
        if not obs[ACTION_MASK].all():
            return env, obs
    raise AssertionError("no start with a masked slot")


def test_invalid_action_is_penalised_and_flagged():
    env, obs = _env_with_masked_slot()
    before = env.path[-1]
    obs2, reward, terminated, truncated, info = env.step(_masked_slot(obs))
    assert info["invalid_action"] and env.path[-1] == before
    assert reward == pytest.approx(-INVALID_ACTION_PENALTY)
    assert info["travel_distance"] == 0 and obs2[CURRENT_INDEX] == obs[CURRENT_INDEX]
    _, _, _, _, info = env.step(int(np.flatnonzero(obs2[ACTION_MASK])[0]))
    assert not info["invalid_action"]


def test_staying_is_masked_unless_allowed_or_the_only_move():
    env, obs = _env_with_masked_slot()
    assert obs[ACTION_MASK][0] == 0 and obs[ACTION_MASK][1:].any()
    _, reward, _, _, info = env.step(0)
    assert info["invalid_action"] and reward == pytest.approx(-INVALID_ACTION_PENALTY)
    env, obs = _env_with_masked_slot(allow_stay=True)
    assert obs[ACTION_MASK][0] == 1
    _, reward, _, _, info = env.step(0)
    assert not info["invalid_action"] and info["travel_distance"] == 0 and reward == 0
    isolated = np.full(9, -1)
    isolated[0] = 0
    env._neighbors = np.array([isolated])  # a node with no edge: staying is the only move
    env.robot_node = 0
    assert env._action_mask().tolist() == [1, 0, 0, 0, 0, 0, 0, 0, 0]


def test_strict_actions_raise_naming_slot_and_valid_ones():
    env, obs = _env_with_masked_slot(strict_actions=True)
    slot = _masked_slot(obs)
    valid = np.flatnonzero(obs[ACTION_MASK]).tolist()
    with pytest.raises(ValueError, match=rf"slot {slot} is masked .*valid slots: {re.escape(str(valid))}"):
        env.step(slot)


def test_out_of_range_action_raises():
    env = GridExploreEnv()
    env.reset(seed=0)
    with pytest.raises(ValueError, match="outside the action space"):
        env.step(9)


def test_reward_follows_the_formula_and_completion_pays_the_bonus():
    from env.baselines import nearest_frontier

    env = GridExploreEnv(map_family="rooms", map_size=20)
    obs, _ = env.reset(seed=2)
    terminated = False
    while not terminated:
        travelled = env.travel_distance
        obs, reward, terminated, truncated, info = env.step(nearest_frontier(obs, env))
        assert not truncated
        expected = step_reward(info["new_cells"], info["travel_distance"] - travelled, terminated, False,
                               sensor_range=6, node_spacing=4)
        assert reward == pytest.approx(expected)
        assert -1.0 <= reward - COMPLETION_BONUS * terminated <= 1.2
    assert reward > COMPLETION_BONUS - 1


@pytest.mark.parametrize("vector_cls", [gym.vector.SyncVectorEnv, gym.vector.AsyncVectorEnv])
def test_vector_envs_stack_the_dict_observation(vector_cls):
    envs = vector_cls([lambda: gym.make("GridExplore-v0", map_size=20, max_steps=15)] * 2)
    try:
        obs, _ = envs.reset(seed=[1, 2])
        assert obs[NODE_FEATURES].shape == (2, envs.single_observation_space[NODE_FEATURES].shape[0], N_NODE_FEATURES)
        for _ in range(20):  # crosses an autoreset
            actions = np.array([int(np.flatnonzero(m)[-1]) for m in obs[ACTION_MASK]])
            obs, rewards, terminated, truncated, infos = envs.step(actions)
            assert obs in envs.observation_space and rewards.shape == (2,)
    finally:
        envs.close()


@settings(max_examples=30, deadline=None)
@given(family=st.sampled_from(MAP_FAMILIES), size=st.integers(12, 36), seed=st.integers(0, 10**6),
       spacing=st.sampled_from([3, 4]))
@example(family="obstacles", size=16, seed=3764, spacing=3)  # two approach nodes once chose one cell
def test_random_valid_episodes_keep_the_invariants(family, size, seed, spacing):
    env = GridExploreEnv(map_family=family, map_size=size, node_spacing=spacing, max_steps=80)
    obs, info = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    coverage, travelled = info["coverage"], 0.0
    for _ in range(80):
        assert obs in env.observation_space
        n = int(obs[NODE_MASK].sum())
        assert obs[NODE_MASK][:n].all() and not obs[NODE_MASK][n:].any()
        assert len(np.unique(env.graph.node_rc[:n], axis=0)) == n  # one node a cell
        current = int(obs[CURRENT_INDEX])
        row = obs[NEIGHBORS][current]
        expected = (row >= 0) & (obs[NODE_MASK][np.maximum(row, 0)] == 1)
        expected[0] = not expected[1:].any()  # staying only when nothing else is possible
        assert (obs[ACTION_MASK].astype(bool) == expected).all()
        assert env.graph.utility[current] == 0  # sensing on arrival clears what a node sees
        action = random_valid_action(obs, rng)
        travelled += hop_length_by_hand(env, current, action) if action else 0.0
        path_before = len(env.path)
        obs, reward, terminated, truncated, info = env.step(action)
        assert not info["invalid_action"]
        assert info["coverage"] >= coverage and 0 < info["coverage"] <= 1
        assert info["travel_distance"] == pytest.approx(travelled)
        hop = env.path[path_before - 1 :]  # the cells the robot's centre crossed, ends included
        assert all(max(abs(a - c), abs(b - d)) == 1 for (a, b), (c, d) in zip(hop, hop[1:]))
        assert not any(env.grid_map.occupied[cell] for cell in hop)
        assert hop[-1] == tuple(env.graph.node_rc[int(obs[CURRENT_INDEX])])
        coverage = info["coverage"]
        if terminated or truncated:
            break
    assert terminated or truncated


@pytest.mark.parametrize("ending", ["terminated", "truncated"])
def test_stepping_after_the_end_without_reset_raises(ending):
    """No second completion bonus and no steps past the limit; a lookahead copy may play on past
    a time limit (greedy's value of a cut-off state), never past termination."""
    env = GridExploreEnv(map_size=16, max_steps=200 if ending == "terminated" else 3)
    obs, _ = env.reset(seed=4)
    terminated = truncated = False
    while not (terminated or truncated):
        obs, reward, terminated, truncated, _ = env.step(greedy(obs, env))
    assert (terminated, truncated) == (ending == "terminated", ending == "truncated")
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(greedy(obs, env))
    twin = env.lookahead_copy()
    if ending == "terminated":
        with pytest.raises(RuntimeError, match="call reset"):
            twin.step(greedy(obs, twin))
    else:
        twin.step(greedy(obs, twin))
    env.reset(seed=5)
    env.step(int(np.flatnonzero(env._action_mask())[0]))  # a reset starts a steppable episode
