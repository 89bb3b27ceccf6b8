"""``planner.worlds.imagined_world`` and the lookahead in it (``planner.lookahead.imagined_costs``):
with the true map as the guess it prices moves as the oracle does; it never reads the true map;
and a lookahead in a guessed world explores the real one whole."""
import functools
from collections import deque

import gymnasium as gym
import numpy as np
import pytest

import env  # noqa: F401  (registers the envs)
import planner.lookahead as lookahead
from config import load_config
from env.baselines import greedy
from env.episode import run_episode
from env.lattice import build_lattice, n_steps_for
from env.observation import ACTION_MASK
from env.sensing import FREE, OCCUPIED, UNKNOWN
from learning.envs import make_envs
from planner.lookahead import (
    LOOKAHEAD_COSTS,
    LookaheadCosts,
    far_unknown_price,
    guessed_lookahead,
    imagined_costs,
    imagined_costs_of_valid,
    lookahead_costs,
    played_after,
    revealed_within,
    steps_to,
    within_steps,
)
from planner.worlds import belief_world, imagined_world
from tests.helpers import SMOKE, guidepost_continuation, mid_episode


def true_map(world):
    return world.grid_map.occupied


def greedy_states(seed: int, family: str = "rooms"):
    """(env, observation) at every state of a greedy episode on a 24 x 24 map."""
    world = gym.make(f"GridExplore-{family.capitalize()}-v0", map_size=24).unwrapped
    obs, _ = world.reset(seed=seed)
    while True:
        yield world, obs
        obs, _, terminated, truncated, _ = world.step(greedy(obs, world))
        if terminated or truncated:
            return


def test_with_the_true_map_as_its_guess_it_prices_moves_as_the_oracle():
    same, states = 0, 0
    for seed in (0, 1, 2):
        for step, (world, obs) in enumerate(greedy_states(seed)):
            oracle = lookahead_costs(world, obs[ACTION_MASK])
            imagined = imagined_costs(world, true_map)
            if step == 0:  # the same lattice, the same graph: the same prices
                assert np.array_equal(imagined, oracle)
            states += 1
            same += imagined is not None and np.array_equal(imagined, oracle)
    # Elsewhere it may differ where the real graph holds approach or lookout nodes, which a
    # graph grown afresh from the belief has not.
    assert same >= 0.95 * states and states > 30


def test_slots_priced_alone_are_played_out_alone_at_the_same_prices(monkeypatch):
    """``slots`` plays out only the slots it names (what a planner pricing the policy's likeliest
    moves saves), each at the price it gets among all the others."""
    played = []
    travel_after = lookahead.travel_after
    monkeypatch.setattr(lookahead, "travel_after", lambda w, slot, *args: played.append(slot) or
                        travel_after(w, slot, *args))
    guess, checked = revealed_within(3), 0
    for world, obs in greedy_states(1):
        valid = np.flatnonzero(obs[ACTION_MASK])
        if len(valid) < 3:
            continue
        full = imagined_costs(world, guess)
        chosen = np.zeros(len(obs[ACTION_MASK]), dtype=bool)
        chosen[valid[::2]] = True
        played.clear()
        part = imagined_costs(world, guess, slots=chosen)
        assert set(played) <= set(valid[::2].tolist()) and played
        assert np.array_equal(part[chosen], full[chosen]) and np.isinf(part[~chosen]).all()
        checked += 1
    assert checked >= 5


def test_a_player_of_the_observations_finishes_play_outs_in_a_guessed_world():
    """A ``Continuation`` steps the imagined copies with ``step`` (observations, info), not
    ``play``: at the first state, the true map as the guess, it prices every move as it does in
    the real world; later, with the unknown as walls, every valid move gets a finite price."""
    for seed in (0, 1):
        states = greedy_states(seed)
        world, obs = next(states)
        imagined = imagined_world(world, true_map(world))
        real = lookahead_costs(world, obs[ACTION_MASK], guidepost_continuation)
        assert np.isfinite(real[obs[ACTION_MASK] == 1]).all()
        assert np.array_equal(lookahead_costs(imagined, imagined._action_mask(), guidepost_continuation), real)
        assert np.array_equal(imagined_costs(world, true_map, guidepost_continuation), real)
        world, obs = next(s for s in states if s[0].steps == 4)
        imagined = imagined_world(world, revealed_within(0)(world))
        mask = imagined._action_mask()
        assert np.isfinite(lookahead_costs(imagined, mask, guidepost_continuation)[mask == 1]).all()
        _, _, _, _, info = imagined.step(int(np.flatnonzero(mask)[-1]))
        assert np.isnan(info["coverage"])  # nothing of the true map is counted there


def test_it_never_reads_the_true_map():
    """Scramble every cell the robot has not seen (and the true lattice with them): the imagined
    world, and its prices, stay the same."""
    guess = revealed_within(0)  # unknown cells as walls: a guess that reads no true cell
    rng = np.random.default_rng(0)
    checked = 0
    for world, obs in greedy_states(4, "caves"):
        if not (world.belief == UNKNOWN).any() or world.steps % 3:
            continue
        before = imagined_world(world, guess(world))
        costs = imagined_costs(world, guess)
        scrambled = world.lookahead_copy()
        p = world.pad
        unknown = scrambled.belief[p:-p, p:-p] == UNKNOWN
        occupied = world.grid_map.occupied.copy()
        occupied[unknown] = rng.random(int(unknown.sum())) < 0.5
        scrambled.grid_map = type(world.grid_map)(occupied=occupied, start=world.grid_map.start)
        scrambled._occupied = np.pad(occupied, p, constant_values=True).ravel()
        scrambled._truth = np.where(scrambled._occupied, OCCUPIED, FREE).astype(np.int8)
        scrambled.graph.geometry = build_lattice(occupied, world.grid_map.start, world.config.node_spacing,
                                                 n_steps_for(world.config.k), p)
        after = imagined_world(scrambled, guess(scrambled))
        assert np.array_equal(after.grid_map.occupied, before.grid_map.occupied)
        assert np.array_equal(imagined_costs(scrambled, guess), costs)
        checked += 1
    assert checked >= 3


def test_the_guessed_world_keeps_the_robot_on_its_node_and_what_it_knows():
    world, obs = next(s for s in greedy_states(5) if s[0].steps == 4)
    guess = np.ones((world.height, world.width), dtype=bool)
    guess[world.height // 2] = False  # a guessed corridor across the unknown
    imagined = imagined_world(world, guess)
    p = world.pad
    belief = world.belief[p:-p, p:-p]
    assert np.array_equal(imagined.belief, world.belief)
    assert np.array_equal(imagined.grid_map.occupied[belief == FREE], np.zeros(int((belief == FREE).sum()), bool))
    assert np.array_equal(imagined.grid_map.occupied[belief == OCCUPIED], np.ones(int((belief == OCCUPIED).sum()), bool))
    unknown = belief == UNKNOWN
    assert (imagined.grid_map.occupied[unknown] == guess[unknown]).mean() > 0.95  # but cells before sites
    assert (imagined.graph.node_rc[imagined.robot_node] == world.graph.node_rc[world.robot_node]).all()
    assert imagined.travel_distance == world.travel_distance and imagined.steps == world.steps


@pytest.mark.parametrize("distance", [0, 2, 100])
def test_a_lookahead_in_a_guessed_world_explores_the_real_one_whole(distance):
    maps = gym.make("GridExplore-v0", map_size=16, max_steps=80)
    result, _ = run_episode(maps, guessed_lookahead(revealed_within(distance)), 3)
    assert result.success and result.coverage == 1.0
    if distance == 100:  # the whole true map: the oracle's moves, so no longer than greedy
        base, _ = run_episode(maps, greedy, 3)
        assert result.travel_distance <= base.travel_distance


def test_over_several_worlds_the_lookahead_takes_the_least_mean_cost_of_the_worlds_that_price_a_move():
    guesses = [revealed_within(3, noise=0.3, seed=k) for k in range(3)]
    averaged, first_alone, checked, differ = guessed_lookahead(*guesses), guessed_lookahead(guesses[0]), 0, 0
    for world, obs in greedy_states(2):
        choice = averaged(obs, world)
        differ += choice != first_alone(obs, world)
        per_world = [imagined_costs(world, guess) for guess in guesses]
        priced = np.array([costs for costs in per_world if costs is not None])
        if len(priced) < 2 or not np.isfinite(priced).any():
            continue
        mean = []
        for slot in range(priced.shape[1]):  # by hand: the mean over the worlds with a price for it
            finite = [cost for cost in priced[:, slot] if np.isfinite(cost)]
            mean.append(sum(finite) / len(finite) if finite else np.inf)
        assert choice == int(np.argmin(mean))
        checked += 1
    assert checked >= 10 and differ >= 1  # the other worlds change some moves
    world, obs = next(s for s in greedy_states(3) if s[0].steps == 2)
    one = revealed_within(2)
    assert guessed_lookahead(one, one)(obs, world) == guessed_lookahead(one)(obs, world)
    with pytest.raises(ValueError, match="at least one guess"):
        guessed_lookahead()


def test_within_steps_counts_4_connected_steps_from_a_known_free_cell():
    world, _ = next(greedy_states(0))
    p = world.pad
    world.belief[p:-p, p:-p] = UNKNOWN
    world.belief[p + 5, p + 7] = FREE  # one known free cell: the cells within are a diamond about it
    rows, cols = np.indices((world.height, world.width))
    for distance in (0, 1, 3):
        assert np.array_equal(within_steps(world, distance), abs(rows - 5) + abs(cols - 7) <= distance)
    truth = world.grid_map.occupied
    assert np.array_equal(revealed_within(2)(world), ~(abs(rows - 5) + abs(cols - 7) <= 2) | truth)


def test_a_noisy_reveal_guesses_wrong_only_unknown_cells_in_reach_at_about_its_rate():
    world, _ = next(s for s in greedy_states(1) if s[0].steps == 3)
    p = world.pad
    clean = revealed_within(4)(world)
    noisy = revealed_within(4, noise=0.3, seed=7)(world)
    in_reach = within_steps(world, 4) & (world.belief[p:-p, p:-p] == UNKNOWN)
    wrong = clean != noisy
    assert not (wrong & ~in_reach).any()  # known cells, and cells beyond the reach, stay as they were
    assert 0.2 < wrong[in_reach].mean() < 0.4 and in_reach.sum() > 30
    assert np.array_equal(revealed_within(4, noise=0.3, seed=7)(world), noisy)  # the same draw at the same step
    assert np.array_equal(revealed_within(4, noise=0.0)(world), clean)
    with pytest.raises(ValueError, match="noise=1.5"):
        revealed_within(4, noise=1.5)


def test_every_valid_move_the_imagined_world_does_not_price_costs_its_dearest(monkeypatch):
    world, obs = next(greedy_states(0))
    priced = {"costs": np.array([5.0, np.inf, 7.0, np.inf, 6.0])}
    monkeypatch.setattr(lookahead, "imagined_costs", lambda w, guess, continuation=None, end_price=None, slots=None: priced["costs"])
    mask = np.array([1, 1, 1, 0, 0], dtype=np.int8)
    np.testing.assert_array_equal(imagined_costs_of_valid(world, true_map, mask), [5.0, 7.0, 7.0, np.inf, np.inf])
    priced["costs"] = np.array([np.inf, np.inf, np.inf, np.inf, 6.0])  # only a masked slot priced
    assert imagined_costs_of_valid(world, true_map, mask) is None
    priced["costs"] = None  # the robot's node has no twin in the imagined world
    assert imagined_costs_of_valid(world, true_map, mask) is None


def test_costs_with_a_reveal_are_priced_in_the_world_that_knows_the_map_that_far():
    config = load_config(SMOKE)
    envs = make_envs(config.env, run_seed=5, wrap=functools.partial(LookaheadCosts, reveal=2))
    obs, info = envs.reset()
    rng = np.random.default_rng(0)
    differ = 0
    for _ in range(30):
        for i, one in enumerate(envs.envs):
            mask = obs[ACTION_MASK][i]
            expected = imagined_costs_of_valid(one.unwrapped, revealed_within(2), mask)
            if expected is None:
                assert np.isinf(info[LOOKAHEAD_COSTS][i]).all()
                continue
            np.testing.assert_array_equal(info[LOOKAHEAD_COSTS][i], expected.astype(np.float32))
            assert np.isfinite(expected[mask == 1]).all() and np.isinf(expected[mask == 0]).all()
            differ += not np.array_equal(expected, lookahead_costs(one.unwrapped, mask))
        actions = [int(rng.choice(np.flatnonzero(mask))) for mask in obs[ACTION_MASK]]
        obs, _, _, _, info = envs.step(actions)
    envs.close()
    assert differ > 0  # the reveal, not the whole true map, priced them
    with pytest.raises(ValueError, match="reveal=-1"):
        LookaheadCosts(envs.envs[0], reveal=-1)


def steps_by_queue(sources: np.ndarray, passable: np.ndarray) -> np.ndarray:
    """The reference for ``steps_to``: a breadth-first search, cell by cell, from a queue."""
    steps = np.full(sources.shape, np.inf)
    queue = deque(zip(*np.nonzero(sources)))
    for cell in queue:
        steps[cell] = 0
    while queue:
        r, c = queue.popleft()
        for rr, cc in ((r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1)):
            if 0 <= rr < steps.shape[0] and 0 <= cc < steps.shape[1] and passable[rr, cc] and np.isinf(steps[rr, cc]):
                steps[rr, cc] = steps[r, c] + 1
                queue.append((rr, cc))
    return steps


def test_steps_to_walks_4_connected_through_passable_cells_by_hand_and_by_a_queue():
    passable = np.ones((5, 6), dtype=bool)
    passable[1:, 2] = False  # a wall with a gap in the top row
    sources = np.zeros_like(passable)
    sources[4, 0] = True
    steps = steps_to(sources, passable)
    assert (steps[4, 0], steps[0, 0], steps[0, 2], steps[0, 3], steps[4, 3], steps[4, 5]) == (0, 4, 6, 7, 11, 13)
    assert np.isinf(steps[1:, 2]).all()
    rng = np.random.default_rng(0)
    for _ in range(20):
        passable = rng.random((17, 23)) < 0.7
        sources = rng.random((17, 23)) < 0.02
        np.testing.assert_array_equal(steps_to(sources, passable), steps_by_queue(sources, passable))
    assert np.isinf(steps_to(np.zeros_like(passable), passable)).all()  # no source: nothing is reachable


def test_the_far_unknown_price_is_the_weighted_walk_to_the_unknown_beyond_reach():
    checked = 0
    for world, _ in greedy_states(3):
        p = world.pad
        belief = world.belief[p:-p, p:-p]
        far = (belief == UNKNOWN) & ~within_steps(world, 4)
        steps = steps_by_queue(far, belief != OCCUPIED)
        price = far_unknown_price(2.5, reach=4)(world)
        np.testing.assert_allclose(price, 2.5 * np.where(np.isfinite(steps), steps, 0.0))
        assert (price[far] == 0).all()
        checked += far.any() and (price > 0).any()
    assert checked >= 3
    assert not far_unknown_price(0.0)(world).any()
    for bad, message in (({"weight": -1.0}, "weight=-1.0"), ({"weight": 1.0, "reach": -2}, "reach=-2")):
        with pytest.raises(ValueError, match=message):
            far_unknown_price(**bad)


def test_an_end_price_adds_its_value_at_the_cell_where_each_play_out_ends():
    guess = revealed_within(3)
    for world, obs in greedy_states(1):
        if world.steps == 3:
            break
    plain = imagined_costs(world, guess)
    flat = imagined_costs(world, guess, end_price=lambda w: np.full(w.grid_map.occupied.shape, 5.0))
    priced = np.isfinite(plain)
    assert priced.sum() >= 2
    np.testing.assert_allclose(flat[priced], plain[priced] + 5.0, rtol=0, atol=1e-4)
    imagined = imagined_world(world, guess(world))
    ends = {}
    for slot in np.flatnonzero(priced):
        played, _ = played_after(imagined, int(slot))
        ends[int(slot)] = tuple(played.graph.node_rc[played.robot_node])
    end = ends[int(np.flatnonzero(priced)[0])]  # where the first priced slot's play-out ends

    def spike(w):
        price = np.zeros(w.grid_map.occupied.shape)
        price[end] = 100.0
        return price

    spiked = imagined_costs(world, guess, end_price=spike)
    for other, cell in ends.items():  # the slots whose play-outs end there pay 100 more, the rest nothing
        np.testing.assert_allclose(spiked[other], plain[other] + (100.0 if cell == end else 0.0), rtol=0, atol=1e-4)
    with pytest.raises(ValueError, match="an end cost prices greedy's play-outs only"):
        lookahead_costs(imagined, imagined._action_mask(), guidepost_continuation, np.zeros((3, 3)))


def test_the_belief_world_holds_what_the_robot_knows_and_nothing_more():
    """``planner.worlds.belief_world``: a world for honest lookahead, the unknown taken as walls."""
    env, obs = mid_episode(max_steps=200)
    belief_before = env.belief.copy()
    known_free = env.belief == FREE
    assert (env.belief == UNKNOWN).any()  # there is something left to hide

    world = belief_world(env)
    p = env.pad
    assert np.array_equal(world.grid_map.occupied, ~known_free[p:-p, p:-p])
    o, steps = obs, 0
    while True:
        o, _, terminated, truncated, _ = world.step(greedy(o, world))
        steps += 1
        if terminated or truncated:
            break
    assert terminated and steps > 1  # it cleared the known frontiers, travelling to do so
    assert np.array_equal(world.belief == FREE, known_free)  # no free cell the robot had not seen
    assert np.array_equal(env.belief, belief_before)  # and the original is untouched
