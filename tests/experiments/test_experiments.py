"""Every experiment behind docs/results.md runs end to end on tiny sizes."""
import json
import signal
import sys

import gymnasium as gym
import numpy as np
import pytest
import torch
from PIL import Image

import planner.imitation as imitation
from env.grid_explore import GridExploreEnv
from env.observation import ACTION_MASK
from evaluation.play import load_policy
from experiments import (
    best_move,
    explorer_travel,
    headroom,
    imitation_fit,
    neighbor_crossover,
    padding_trim,
    size_buckets,
)
from graph_batch import forward_each
from planner.imitation import Labelled, fit_on
from planner.lookahead import travel_after
from tests.helpers import ROOT, SMOKE, printed_by
from tests.map_folders import MAP_ORDER, write_maps


@pytest.mark.parametrize("module, argv, expected", [
    (padding_trim, ["--batch", "4", "--repeats", "1"], "speed-up x"),
    (size_buckets, ["--batch", "4", "--buckets", "1", "2", "--repeats", "1"], "buckets 2:"),
    (headroom, ["--episodes", "2", "--reveal", "2", "--reveal-noise", "0.1", "--env", "map_size=16"],
     "travel revealed_2_noise_0.1 / greedy:"),
    (headroom, ["--episodes", "1", "--reveal", "2", "--reveal-noise", "0.1", "--worlds", "2", "--env", "map_size=16"],
     "travel revealed_2_noise_0.1_worlds_2 / greedy:"),
    (best_move, ["--checkpoint", "pretrained/default.pt", "--episodes", "1", "--env", "map_size=16", "--reveal", "2"],
     "| agent right | greedy right | planner right | revealed_2 right | share of the agent's regret |"),
    (neighbor_crossover, ["--nodes", "8", "--degrees", "2", "8", "--rounds", "1", "--repeats", "1"],
     "N=   8 degree=  8 (N / degree  1.0): kernel speed over SDPA"),
    (explorer_travel, ["--episodes", "2", "--env", "map_size=16"],
     "lattice from the belief alone, sides seen: Explorer's travel / evaluate.py's "),
    (explorer_travel, ["--episodes", "1", "--env", "map_size=16", "--layout", "--no-sides"],
     "lattice from the map's walls, no sides seen: Explorer's travel / evaluate.py's "),
])
def test_experiment_prints_its_figures(module, argv, expected, monkeypatch, capsys):
    assert expected in printed_by(module, argv, monkeypatch, capsys)


def test_stakes_table_bins_the_agents_two_moves_by_what_is_at_stake():
    """Hand-computed: four states whose two likeliest moves differ by 1, 3, 20 and 40 cells; the
    agent takes the dearer at 3 and 40 cells (regret 3 + 40 of 43), the other mover at 20."""
    first = np.array([10.0, 13.0, 50.0, 100.0])
    second = np.array([11.0, 10.0, 70.0, 60.0])
    other = np.array([10.0, 10.0, 70.0, 60.0])
    rows = best_move.stakes_table(first, second, {"agent": first, "other": other})
    assert rows[0] == "| at stake (cells) | states | agent right | other right | share of the agent's regret |"
    assert rows[2:] == ["| (0, 2] | 1 | 1.000 | 1.000 | 0.00 |", "| (2, 4] | 1 | 0.000 | 1.000 | 0.07 |",
                        "| (16, 32] | 1 | 1.000 | 0.000 | 0.00 |", "| more than 32 | 1 | 0.000 | 1.000 | 0.93 |"]


@pytest.mark.parametrize("argv, message", [(["--episodes", "0"], "--episodes must be >= 1, got 0"),
                                           (["--reveal", "-1"], "--reveal: a number of steps, 0 or more")])
def test_best_move_refuses_bad_options_before_playing(argv, message, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["best_move", "--checkpoint", "pretrained/default.pt", *argv])
    with pytest.raises(SystemExit):
        best_move.main()
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    (["--reveal-noise", "0.1"], "--reveal-noise needs --reveal D"),
    (["--reveal", "2", "--reveal-noise", "1.5"], "--reveal-noise 1.5: a probability, between 0 and 1"),
    (["--reveal", "2", "--worlds", "2"], "--worlds needs --reveal-noise P"),
    (["--reveal", "2", "--reveal-noise", "0.1", "--worlds", "0"], "--worlds 0: a number of worlds, 1 or more"),
])
def test_headroom_refuses_a_noise_it_cannot_apply(argv, message, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["headroom", *argv])
    with pytest.raises(SystemExit):
        headroom.main()
    assert message in capsys.readouterr().err


def test_imitation_fit_judges_each_setting_on_the_held_out_round(tmp_path, monkeypatch, capsys):
    states = tmp_path / "states"
    assert imitation.main(["--config", str(SMOKE), "--out", str(states), "--rounds", "2", "--states", "16",
                           "--epochs", "1", "--validation-maps", "1"]) == 0
    monkeypatch.setattr(sys, "argv", ["imitation_fit", "--config", str(SMOKE), "--states", str(states), "--train", "0",
                                      "--held-out", "1", "--epochs", "2", "--variant", "model.embed_dim=16",
                                      "--temperature", "1", "--json", str(tmp_path / "fit.json"),
                                      "--save", str(tmp_path / "weights")])
    imitation_fit.main()
    out = capsys.readouterr().out
    assert "16 training states (rounds [0]), 16 held-out (round 1)" in out
    assert "| base |" in out and "| model.embed_dim=16 |" in out
    curves = json.loads((tmp_path / "fit.json").read_text())
    assert [point["epoch"] for point in curves["model.embed_dim=16"]] == [0, 1, 2]
    assert all(0 <= point["held_out"]["argmax_best"] <= 1 for curve in curves.values() for point in curve)
    policy, config = load_policy(tmp_path / "weights" / "variant_1.pt")  # the trained weights, ready for --init-from
    assert config.model.embed_dim == 16
    assert fit_on(policy, Labelled.load(states / "states_01.npz", 5), 4.0, 1)["regret"] == pytest.approx(
        curves["model.embed_dim=16"][-1]["held_out"]["regret"], rel=1e-5)


def test_a_stopped_imitation_fit_starts_no_later_setting(tmp_path, monkeypatch, capsys):
    states = tmp_path / "states"
    assert imitation.main(["--config", str(SMOKE), "--out", str(states), "--rounds", "2", "--states", "8",
                           "--epochs", "1", "--validation-maps", "1"]) == 0
    fit = imitation_fit.train_epochs
    calls = []

    def train_then_signal(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            signal.raise_signal(signal.SIGINT)
        return fit(*args, **kwargs)

    monkeypatch.setattr(imitation_fit, "train_epochs", train_then_signal)
    monkeypatch.setattr(sys, "argv", ["imitation_fit", "--config", str(SMOKE), "--states", str(states), "--train", "0",
                                      "--held-out", "1", "--epochs", "3", "--variant", "model.embed_dim=16",
                                      "--json", str(tmp_path / "fit.json"), "--save", str(tmp_path / "weights")])
    imitation_fit.main()
    captured = capsys.readouterr()
    assert "SIGINT: stopping: the epoch in progress is dropped, no later setting starts" in captured.err
    assert "base, epoch 1:" in captured.out and "base, epoch 2:" not in captured.out
    assert "embed_dim=16," not in captured.out
    assert list(json.loads((tmp_path / "fit.json").read_text())) == ["base"] and not (tmp_path / "weights").exists()


@pytest.mark.parametrize("bad, message", [(["--held-out", "0"], "--held-out 0 is also in --train [0]"),
                                          (["--held-out", "1", "--epochs", "0"], "got 0, 256, 0.0003 and 0.0"),
                                          (["--held-out", "1", "--temperature", "-1"], "got 8, 256, 0.0003 and -1.0"),
                                          (["--held-out", "1"], "no such states file")])
def test_imitation_fit_refuses_bad_settings_before_any_training(tmp_path, monkeypatch, capsys, bad, message):
    monkeypatch.setattr(sys, "argv", ["imitation_fit", "--config", str(SMOKE), "--states", str(tmp_path),
                                      "--train", "0", *bad])
    with pytest.raises(SystemExit):
        imitation_fit.main()
    assert message in capsys.readouterr().err


def test_imitation_fit_settings_may_drop_the_trailing_feature_columns_of_the_states(tmp_path, monkeypatch, capsys):
    states = tmp_path / "states"
    assert imitation.main(["--config", str(SMOKE), "--out", str(states), "--rounds", "2", "--states", "16", "--epochs",
                           "1", "--validation-maps", "1", "env.kwargs.privileged_features=true"]) == 0
    monkeypatch.setattr(sys, "argv", ["imitation_fit", "--config", str(SMOKE), "--states", str(states), "--train", "0",
                                      "--held-out", "1", "--epochs", "1", "--variant", "env.kwargs.privileged_features=false",
                                      "--save", str(tmp_path / "weights"), "env.kwargs.privileged_features=true"])
    imitation_fit.main()
    with_columns, _ = load_policy(tmp_path / "weights" / "base.pt")
    without, _ = load_policy(tmp_path / "weights" / "variant_1.pt")
    assert {tuple(v.shape) for k, v in with_columns.state_dict().items() if k.endswith("initial_embedding.weight")} == {(16, 7)}
    assert {tuple(v.shape) for k, v in without.state_dict().items() if k.endswith("initial_embedding.weight")} == {(16, 5)}
    held_out = Labelled.load(states / "states_01.npz", 7)
    assert fit_on(without, held_out.leading_features(5), 4.0, 1)["argmax_best"] >= 0  # it reads 5 columns
    with pytest.raises(RuntimeError):  # and could not read the states whole
        fit_on(without, held_out, 4.0, 1)


def test_imitation_fit_refuses_settings_whose_features_are_not_leading_columns(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["imitation_fit", "--config", str(SMOKE), "--states", str(tmp_path), "--train", "0",
                                      "--held-out", "1", "--variant", "env.kwargs.context_features=false",
                                      "env.kwargs.context_features=true", "env.kwargs.privileged_features=true"])
    with pytest.raises(SystemExit):
        imitation_fit.main()
    assert "not the leading columns of" in capsys.readouterr().err


def test_best_move_draws_the_agents_costliest_mistake(tmp_path, monkeypatch, capsys):
    """``--picture``: the state where the agent's first move is dearer than its second by the most,
    drawn; the printed gap is the largest C(first) - C(second) the agent met (its states priced
    again here, independently of the bench's bookkeeping)."""
    picture = tmp_path / "pictures" / "costly.png"
    monkeypatch.setattr(sys, "argv", ["best_move", "--checkpoint", "pretrained/default.pt", "--episodes", "2",
                                      "--env", "map_size=16", "--picture", str(picture)])
    best_move.main()
    line = capsys.readouterr().out.splitlines()[-1]
    assert line.startswith("the costliest mistake (a procedural map, step ") and line.endswith(f"): {picture}")
    assert Image.open(picture).size[0] > 2.5 * Image.open(picture).size[1]
    policy, config = load_policy(ROOT / "pretrained" / "default.pt")
    world = gym.make(config.env.id, **{**config.env.kwargs, "map_size": 16})
    gaps = []
    for episode in range(2):
        obs, _ = world.reset(seed=10_000 + episode)
        over = False
        while not over:
            with torch.no_grad():
                logits, _ = forward_each(policy, {key: value[None] for key, value in obs.items()})
            first, second = torch.topk(logits[0], 2).indices.tolist()
            if obs[ACTION_MASK][second]:
                gaps.append(travel_after(world.unwrapped, first) - travel_after(world.unwrapped, second))
            obs, _, terminated, truncated, _ = world.step(first)
            over = terminated or truncated
    gaps = np.array(gaps)[np.isfinite(gaps)]  # the bench weighs both moves only where greedy can finish
    assert gaps.max() > 0  # these maps hold a mistake to draw
    assert f", {gaps.max():.1f} cells): " in line


def test_best_move_refuses_a_picture_it_could_not_write(tmp_path, monkeypatch, capsys):
    (tmp_path / "file").write_text("")
    monkeypatch.setattr(sys, "argv", ["best_move", "--checkpoint", "pretrained/default.pt",
                                      "--picture", str(tmp_path / "file" / "x.png")])
    with pytest.raises(SystemExit):
        best_move.main()
    assert "--picture: cannot write" in capsys.readouterr().err


def test_best_move_plays_each_map_of_a_folder_once_in_order(tmp_path, monkeypatch, capsys):
    """With a ``map_dir``, episode i plays map i of the collection's order, as evaluate.py's do:
    seeds drawn maps at random, and two episodes of one map (the same start marker) counted one
    state twice. More episodes than maps is refused before any plays."""
    folder = write_maps(tmp_path / "maps")
    played = []
    reset = GridExploreEnv.reset

    def spy(self, *args, **kwargs):
        obs, info = reset(self, *args, **kwargs)
        played.append(info["map_file"])
        return obs, info

    monkeypatch.setattr(GridExploreEnv, "reset", spy)
    argv = ["best_move", "--checkpoint", "pretrained/default.pt", "--env", f"map_dir={folder}"]
    monkeypatch.setattr(sys, "argv", [*argv, "--episodes", "3"])
    best_move.main()
    assert played == MAP_ORDER[:3]
    assert "states of 3 episodes" in capsys.readouterr().out
    monkeypatch.setattr(sys, "argv", [*argv, "--episodes", "5"])
    with pytest.raises(SystemExit):
        best_move.main()
    assert f"--episodes 5: map_dir='{folder}' holds 4 maps" in capsys.readouterr().err
    assert played == MAP_ORDER[:3]
