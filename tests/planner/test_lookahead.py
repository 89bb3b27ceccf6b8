"""The lookahead's play-outs joined where they meet (``planner.lookahead.travel_after`` with
``endings``): every C(s, slot) equal, to the last bit, to the slot's own full play-out's."""
import gymnasium as gym
import numpy as np
import pytest

import env.greedy_value as greedy_value
import planner.lookahead as lookahead
from env.baselines import greedy
from env.observation import ACTION_MASK
from planner.lookahead import lookahead_costs, travel_after
from run.seeding import eval_episode_seed


def states(kind: str, seed: int, max_steps: int, n: int = 14):
    """(world, obs) along an episode of greedy's moves and random ones, on maps whose graphs take
    approach nodes and lookouts (tests/env/test_state_key.py): 16 x 16 held-out maps or 32 x 32 caves."""
    if kind == "lookout":
        env = gym.make("GridExplore-v0", map_size=16, max_steps=max_steps)
        obs, _ = env.reset(seed=eval_episode_seed(900007, seed))
    else:
        env = gym.make("GridExplore-v0", map_size=32, map_family="caves", max_steps=max_steps)
        obs, _ = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    for _ in range(n):
        yield env.unwrapped, obs
        move = greedy(obs, env.unwrapped) if rng.random() < 0.5 else int(rng.choice(np.flatnonzero(obs[ACTION_MASK])))
        obs, _, terminated, truncated, _ = env.step(move)
        if terminated or truncated:
            return


@pytest.mark.parametrize("kind, seed, max_steps", [("lookout", 10, 256), ("lookout", 288, 256),
                                                   ("caves", 30, 200), ("caves", 31, 30)])
def test_joined_play_outs_cost_what_each_slots_own_play_out_costs(kind, seed, max_steps, monkeypatch):
    """Each state's slots in turn, one ``endings`` between them, against ``travel_after`` of each
    slot alone, with and without a price on the end cell; with 30 steps on 32 x 32 caves the step
    limit cuts some play-outs (an infinite C, a play-out never joined), and every C still agrees.
    Where nothing is cut, most of the moves are joined, not played."""
    played = []
    greedy_move = greedy_value.greedy_move
    monkeypatch.setattr(greedy_value, "greedy_move", lambda world: played.append(1) or greedy_move(world))
    end_cost = np.random.default_rng(seed).random((32, 32)) * 10
    joined_moves = alone_moves = infinite = 0
    for world, obs in states(kind, seed, max_steps):
        slots = np.flatnonzero(obs[ACTION_MASK])
        for price in (None, end_cost[: world.height, : world.width]):
            before = len(played)
            endings = {}
            joined = [travel_after(world, int(slot), price, endings) for slot in slots]
            joined_moves += len(played) - before
            before = len(played)
            alone = [travel_after(world, int(slot), price, {}) for slot in slots]
            alone_moves += len(played) - before
            assert joined == alone  # floats compared exactly
            assert alone == [travel_after(world, int(slot), price) for slot in slots]  # the copy played through
            infinite += np.isinf(alone).sum()
    assert alone_moves > 1000
    if max_steps == 30:
        assert infinite > 10
    else:
        assert joined_moves < 0.8 * alone_moves and not infinite


def test_lookahead_costs_join_the_slots_play_outs(monkeypatch):
    calls = []
    original = lookahead.travel_after
    monkeypatch.setattr(lookahead, "travel_after", lambda *args: calls.append(args[3]) or original(*args))
    world, obs = next(states("caves", 30, 200))
    costs = lookahead_costs(world, obs[ACTION_MASK])
    slots = np.flatnonzero(obs[ACTION_MASK])
    assert len(calls) == len(slots) > 1 and all(endings is calls[0] for endings in calls) and calls[0]
    assert np.array_equal(costs[slots], np.float32([original(world, int(slot)) for slot in slots]))
