"""The lookaheads of bench/headroom.py: the oracle never travels more than greedy, the policy it
rolls out; the belief lookahead, which cannot know the map, still completes it."""
import gymnasium as gym
import pytest

import env  # noqa: F401  (registers the envs)
from env.lookahead import belief_lookahead, greedy_lookahead_oracle
from env.baselines import greedy
from rl.evaluation import run_episode


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
