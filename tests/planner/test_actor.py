"""The planner (``planner.actor``): the guessed world it plans in, and how it weighs that world's
price against the agent's preference."""
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

import planner.actor as planner_module
from env.baselines import greedy, greedy_on_return
from env.observation import ACTION_MASK
from env.sensing import FREE, UNKNOWN
from evaluation.play import load_policy
from graph_batch import argmax_actor, collate
from learning.envs import make_env, with_env_overrides
from planner.actor import in_free_squares, planning_actor, predicted_guess
from planner.lookahead import (
    far_unknown_price,
    guessed_lookahead,
    imagined_costs,
    imagined_costs_of_valid,
    revealed_within,
    within_steps,
)
from planner.predictor import MapPredictor
from tests.helpers import room_folder_env


def test_the_guess_is_the_predictors_walls_read_from_the_belief_alone(tmp_path):
    net = MapPredictor(width=4).eval()
    world = make_env(room_folder_env(tmp_path)).unwrapped
    world.reset(seed=0, options={"map_index": 1})
    guess = predicted_guess(net)(world)
    p = world.pad
    with torch.no_grad():
        expected = (net(torch.from_numpy(world.belief[None, p:-p, p:-p].copy()))[0] > 0).numpy()
    assert guess.shape == (20, 22) and np.array_equal(guess, expected)
    world.grid_map = replace(world.grid_map, occupied=~world.grid_map.occupied)  # the truth is never read
    assert np.array_equal(predicted_guess(net)(world), guess)
    near = within_steps(world, 2)
    assert np.array_equal(predicted_guess(net, within=2)(world), guess | ~near) and not near.all()
    with pytest.raises(ValueError, match="threshold=1"):
        predicted_guess(net, 1.0)
    with pytest.raises(ValueError, match="within=-1"):
        predicted_guess(net, within=-1)
    with pytest.raises(ValueError, match="opening=0"):
        predicted_guess(net, opening=0)


def brute_force_in_free_squares(free, width):
    """Each cell: does some width x width square of free cells hold it? By looping over squares."""
    covered = np.zeros_like(free)
    for r in range(free.shape[0] - width + 1):
        for c in range(free.shape[1] - width + 1):
            if free[r:r + width, c:c + width].all():
                covered[r:r + width, c:c + width] = True
    return covered


def test_cells_in_free_squares_by_hand_and_by_brute_force():
    free = np.ones((6, 7), bool)
    free[:, 3] = False  # two rooms 3 wide
    free[4:] = False
    free[0, 0] = False  # a notch: (0, 1), (0, 2) still lie in a 2 x 2 square, (1, 0) too
    expected_2 = np.array([[0, 1, 1, 0, 1, 1, 1], [1, 1, 1, 0, 1, 1, 1], [1, 1, 1, 0, 1, 1, 1],
                           [1, 1, 1, 0, 1, 1, 1], [0] * 7, [0] * 7], bool)
    assert np.array_equal(in_free_squares(free, 2), expected_2)
    in_3 = in_free_squares(free, 3)
    assert in_3[1:4, :3].all() and not in_3[0, :3].any() and in_3[:4, 4:].all() and not in_3[4:].any()
    assert not in_free_squares(free, 4).any() and not in_free_squares(free, 9).any()  # wider than the map
    rng = np.random.default_rng(0)
    for width in (1, 2, 3, 4):
        noise = rng.random((13, 17)) < 0.8
        assert np.array_equal(in_free_squares(noise, width), brute_force_in_free_squares(noise, width))


class Walls(torch.nn.Module):
    """A predictor whose guess is the given wall mask (logit +-10 per cell)."""

    def __init__(self, walls):
        super().__init__()
        self.logits = torch.where(torch.from_numpy(walls), 10.0, -10.0)

    def forward(self, belief):
        return self.logits[None].expand(belief.shape[0], -1, -1)


def test_an_opened_guess_walls_the_unknown_free_slivers_narrower_than_the_square(tmp_path):
    world = make_env(room_folder_env(tmp_path)).unwrapped
    world.reset(seed=0, options={"map_index": 1})
    p = world.pad
    belief = world.belief[p:-p, p:-p]
    unknown = belief == UNKNOWN
    # every unknown cell a wall, but for a free sliver a cell wide between unknown cells
    walls = np.ones(belief.shape, bool)
    walled_in = unknown[1:-1] & unknown[:-2] & unknown[2:]  # [H-2, W]: a cell with unknown cells above and below
    walled_in[:, 1:-1] &= walled_in[:, :-2] & walled_in[:, 2:]
    row = int(np.argmax(walled_in.sum(axis=1)))
    sliver = np.zeros_like(unknown)
    sliver[row + 1, 1:-1] = walled_in[row, 1:-1]
    walls[sliver] = False
    assert sliver.sum() >= 3
    plain = predicted_guess(Walls(walls))(world)
    opened = predicted_guess(Walls(walls), opening=2)(world)
    assert not plain[sliver].any() and opened[sliver].all()  # a passage one cell wide is closed
    assert np.array_equal(opened[~unknown], plain[~unknown])  # the known cells stay as the robot knows them
    free_square = brute_force_in_free_squares(np.where(unknown, ~plain, belief == FREE), 2)
    assert np.array_equal(opened, plain | (unknown & ~free_square))
    assert np.array_equal(predicted_guess(Walls(walls), opening=1)(world), plain)  # every free cell is a 1 x 1 square


def test_a_told_guess_takes_the_true_map_on_the_cells_told_and_opens_after(tmp_path):
    world = make_env(room_folder_env(tmp_path)).unwrapped
    world.reset(seed=0, options={"map_index": 1})
    p = world.pad
    belief = world.belief[p:-p, p:-p]
    unknown, truth = belief == UNKNOWN, world.grid_map.occupied
    net = MapPredictor(width=4).eval()
    seen = []

    def everywhere(env, wall_probability):
        seen.append(wall_probability)
        return np.ones(wall_probability.shape, bool)

    plain = predicted_guess(net)(world)
    told = predicted_guess(net, told=everywhere)(world)
    with torch.no_grad():
        logits = net(torch.from_numpy(belief[None].copy()))[0]
    assert np.array_equal(seen[0], torch.sigmoid(logits).numpy())  # told reads the predictor's probabilities
    assert np.array_equal(told[unknown], truth[unknown]) and np.array_equal(told[~unknown], plain[~unknown])
    assert not np.array_equal(plain, told)  # the truth changed the guess
    assert np.array_equal(predicted_guess(net, told=lambda env, w: np.zeros(w.shape, bool))(world), plain)
    # the opening runs after the truth is set, on the told world
    opened = predicted_guess(net, opening=2, told=everywhere)(world)
    assert np.array_equal(opened, told | (unknown & ~in_free_squares(np.where(unknown, ~told, belief == FREE), 2)))


def test_the_planner_is_the_lookahead_at_weight_zero_and_the_policy_at_a_large_weight(tmp_path):
    policy, config = load_policy(Path("pretrained/default.pt"))
    guess = predicted_guess(MapPredictor(width=4).eval())
    env = make_env(with_env_overrides(config.env, ["map_size=16"]))
    obs, _ = env.reset(seed=2)
    compared = 0
    for _ in range(8):
        lookahead, agent = guessed_lookahead(guess)(obs, env), argmax_actor(policy)(obs, env)
        assert planning_actor(policy, guess, 0.0)(obs, env) == lookahead
        assert planning_actor(policy, guess, 1e3)(obs, env) == agent
        compared += lookahead != agent
        obs, _, terminated, truncated, _ = env.step(agent)
        if terminated or truncated:
            break
    assert compared >= 1  # on some state the two disagree, so the weight decided


def test_the_planner_with_an_end_price_takes_the_move_cheapest_with_it():
    policy, config = load_policy(Path("pretrained/default.pt"))
    guess, price = revealed_within(2), far_unknown_price(20.0, reach=3)
    env = make_env(with_env_overrides(config.env, ["map_size=24"]))
    obs, _ = env.reset(seed=1)
    changed = 0
    for _ in range(12):
        world, valid = env.unwrapped, obs[ACTION_MASK].astype(bool)
        costs = imagined_costs_of_valid(world, guess, valid, end_price=price)
        move = planning_actor(policy, guess, 0.0, price)(obs, env)
        if costs is not None:
            assert costs[move] == costs[valid].min()
        changed += move != planning_actor(policy, guess, 0.0)(obs, env)
        obs, _, terminated, truncated, _ = env.step(move)
        if terminated or truncated:
            break
    assert changed >= 1  # the price decided some move


def test_a_planner_of_the_policys_likeliest_moves_chooses_the_cheapest_of_them():
    """``candidates`` k prices the policy's k likeliest valid moves only: 1 is the policy's
    argmax, k >= the valid moves the full planner, 2 the move of the two with the lower score,
    priced as among all."""
    policy, config = load_policy(Path("pretrained/default.pt"))
    guess = revealed_within(2)
    env = make_env(with_env_overrides(config.env, ["map_size=24"]))
    obs, _ = env.reset(seed=3)
    outside, checked = 0, 0
    for _ in range(25):
        world, valid = env.unwrapped, obs[ACTION_MASK].astype(bool)
        full = planning_actor(policy, guess, 0.0)(obs, env)
        assert planning_actor(policy, guess, 0.0, candidates=1)(obs, env) == argmax_actor(policy)(obs, env)
        assert planning_actor(policy, guess, 0.0, candidates=len(valid))(obs, env) == full
        with torch.no_grad():
            logits = policy(collate(obs))[0][0]
        slots = np.flatnonzero(valid)
        top_two = slots[np.argsort(-logits[slots].numpy(), kind="stable")[:2]]
        costs = imagined_costs(world, guess)
        move = planning_actor(policy, guess, 0.0, candidates=2)(obs, env)
        if costs is not None and len(top_two) == 2 and np.isfinite(costs[top_two]).all():
            assert move in top_two and costs[move] == costs[top_two].min()
            checked += 1
        outside += full not in top_two
        obs, _, terminated, truncated, _ = env.step(full)
        if terminated or truncated:
            break
    assert checked >= 5 and outside >= 1  # the full lookahead left the two on some state
    with pytest.raises(ValueError, match="candidates=0"):
        planning_actor(policy, guess, 0.0, candidates=0)


def test_back_where_it_chose_with_nothing_new_seen_the_planner_takes_greedys_move(monkeypatch):
    """A guessed world that always prices going back cheapest would send the robot between two
    nodes for good, as two maps of 48 x 48 cells once did: the planner, standing again on a node
    where it chose with no cell seen since, takes greedy's move instead, and explores the map."""
    policy, config = load_policy(Path("pretrained/default.pt"))
    env = make_env(with_env_overrides(config.env, ["map_size=16"]))
    trail: list[int] = []  # the robot's nodes, one a step

    def back_is_cheapest(world, guess, mask, end_price=None):
        costs = np.where(mask, 100.0, np.inf)
        for slot in np.flatnonzero(mask):
            if len(trail) >= 2 and world._neighbors[world.robot_node, slot] == trail[-2]:
                costs[slot] = 0.0
        return costs

    def play(act) -> tuple[bool, int]:
        obs, _ = env.reset(seed=5)
        trail[:] = [env.unwrapped.robot_node]
        fallbacks = 0
        while True:
            move = act(obs, env)
            assert act(obs, env) == move  # asked twice at one step, the same answer
            fallbacks += move == greedy(obs, env) and trail.count(env.unwrapped.robot_node) > 1
            obs, _, terminated, truncated, _ = env.step(move)
            trail.append(env.unwrapped.robot_node)
            if terminated or truncated:
                return terminated, fallbacks

    def lookahead_alone(obs, env):  # the guessed world's cheapest move, nothing else
        return int(np.argmin(back_is_cheapest(env.unwrapped, None, obs[ACTION_MASK].astype(bool))))

    monkeypatch.setattr(planner_module, "imagined_costs_of_valid", back_is_cheapest)
    assert play(lookahead_alone) == (False, 0)  # it goes round until the step limit
    explored, fallbacks = play(planning_actor(policy, lambda world: None, 0.0))
    assert explored and fallbacks >= 1
    explored, fallbacks = play(greedy_on_return(lookahead_alone))  # the rule alone, as experiments.predicted_lookahead's
    assert explored and fallbacks >= 1
