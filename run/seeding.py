"""Episode seeds: training and evaluation maps are disjoint by construction.

Every training episode is reset with an even seed and every evaluation episode with an odd one,
so no held-out map can ever be a training map, whatever the run seed or episode count.
"""
from __future__ import annotations

import numpy as np

_SEED_SPACE = 2**30


def _mix(*keys: int) -> int:
    return int(np.random.SeedSequence(list(keys)).generate_state(1)[0]) % _SEED_SPACE


def train_episode_seed(run_seed: int, env_index: int, episode: int) -> int:
    """The (even) seed of training episode ``episode`` of environment ``env_index``."""
    return 2 * _mix(run_seed, env_index, episode)


def eval_episode_seed(seed: int, episode: int) -> int:
    """The (odd) seed of held-out evaluation episode ``episode``."""
    return 2 * _mix(seed, episode) + 1


def action_seed(run_seed: int, env_index: int, episode: int, step: int) -> int:
    """The seed of the action env ``env_index`` samples at ``step`` of its training episode ``episode``.

    A sampled action depends only on the policy's weights and where its env is, never on which
    process holds the env or what else it holds, and a replayed env samples what it sampled before.
    """
    return _mix(run_seed, env_index, episode, step, 1)
