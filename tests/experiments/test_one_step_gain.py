"""experiments/one_step_gain.py: move gains against the wrapper stepped in deep copies, the two scores
against hand-computed values, and the whole benchmark on a tiny budget."""
import copy
import sys

import gymnasium as gym
import numpy as np
import pytest
import torch

import env  # noqa: F401  (registers the envs)
from env.baselines import greedy
from env.greedy_value import GREEDY_VALUE, GreedyValue
from env.observation import ACTION_MASK
from experiments import one_step_gain


@pytest.mark.parametrize("seed", [2, 3])
def test_move_gains_are_one_step_differences_of_greedys_value(seed):
    wrapped = GreedyValue(gym.make("GridExplore-v0", map_size=20, max_steps=60))
    obs, info = wrapped.reset(seed=seed)
    obs, _, _, _, info = wrapped.step(greedy(obs, wrapped.unwrapped))
    gains = one_step_gain.move_gains(wrapped, obs, info[GREEDY_VALUE])
    valid = np.flatnonzero(obs[ACTION_MASK])
    assert np.isnan(np.delete(gains, valid)).all()
    for slot in valid:
        twin = copy.deepcopy(wrapped)
        _, reward, _, _, after = twin.step(int(slot))
        assert gains[slot] == pytest.approx(reward + after[GREEDY_VALUE] - info[GREEDY_VALUE], abs=1e-5)
    assert gains[greedy(obs, wrapped.unwrapped)] == pytest.approx(0.0, abs=1e-5)


def test_scores_against_hand_computed_values():
    gains = torch.tensor([[0.0, 0.2, -0.1], [0.0, -0.3, 0.0]])
    valid = torch.tensor([[True, True, True], [True, True, False]])
    scores = torch.tensor([[0.0, 1.0, 5.0], [0.0, 1.0, 9.0]])  # row 1's best score is masked
    assert one_step_gain.argmax_gain(scores, gains, valid) == pytest.approx((-0.1 + -0.3) / 2)
    # Centred per state over valid moves: row 0 target (-1/30, 1/6, -2/15), row 1 (0.15, -0.15).
    assert one_step_gain.centred_r2(gains + 7.0, gains, valid) == pytest.approx(1.0)  # a shift per state is free
    predicted = torch.tensor([[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    assert one_step_gain.centred_r2(predicted, gains, valid) == pytest.approx(0.0)
    flipped = -gains
    assert one_step_gain.centred_r2(flipped, gains, valid) == pytest.approx(-3.0)


def test_benchmark_runs_end_to_end(smoke_run, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["one_step_gain", "--checkpoint", str(smoke_run), "--episodes", "3",
                                      "--epochs", "1", "--workers", "1"])
    one_step_gain.main()
    out = capsys.readouterr().out
    for line in ("best move (knows the map)", "policy's argmax", "fitted network's argmax", "centred R^2"):
        assert line in out
