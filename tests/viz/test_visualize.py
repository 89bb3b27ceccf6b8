"""visualize.py on a trained smoke run: every picture is written, and the weights it draws are distributions."""
from itertools import pairwise

import gymnasium as gym
import numpy as np
import pytest
import torch
from PIL import Image

import visualize
from env.baselines import greedy
from env.episode import run_episode
from evaluation.play import load_policy
from graph_batch import argmax_actor
from planner.files import planner_entry
from planner.predictor import MapPredictor
from planner.predictor_files import predictor_file
from run.pretrained import export


def test_writes_the_gif_the_routes_and_two_pictures_per_encoder_layer(smoke_run, tmp_path):
    assert visualize.main(["--checkpoint", str(smoke_run), "--out", str(tmp_path), "--at", "0"]) == 0
    _, config = load_policy(smoke_run)
    names = sorted(p.name for p in tmp_path.iterdir())
    layers = range(config.model.n_layers)
    expected = ["pointer.gif", "routes.png"] + [f"attention_{kind}_layer{L}.png" for kind in ("map", "matrix") for L in layers]
    assert names == sorted(expected)
    gif = Image.open(tmp_path / "pointer.gif")
    assert gif.n_frames > 1
    width, height = gif.size  # a 16 x 16 map, 128 px rendered: enlarged 4 times, under its caption band
    assert width == 512 and 20 <= height - width <= 60
    bands = []
    for i in range(gif.n_frames):
        gif.seek(i)
        bands.append(np.asarray(gif.convert("RGB"))[: height - width])
    assert all(not np.array_equal(a, b) for a, b in pairwise(bands))  # the step label, frame by frame


def test_draws_the_guess_of_the_map_predictor_the_checkpoint_carries_or_names(smoke_run, tmp_path, capsys):
    torch.save(predictor_file(MapPredictor(width=4), {}), tmp_path / "predictor.pt")
    export(smoke_run, tmp_path / "agent.pt", planner=planner_entry(tmp_path / "predictor.pt"))
    assert visualize.main(["--checkpoint", str(tmp_path / "agent.pt"), "--out", str(tmp_path / "a"), "--at", "1"]) == 0
    assert "wrote " + str(tmp_path / "a") + "/map_guess.png" in capsys.readouterr().out
    assert Image.open(tmp_path / "a" / "map_guess.png").size[0] > 0
    assert visualize.main(["--checkpoint", str(smoke_run), "--planner", str(tmp_path / "predictor.pt"),
                           "--out", str(tmp_path / "b"), "--at", "1"]) == 0
    assert (tmp_path / "b" / "map_guess.png").is_file()
    with pytest.raises(SystemExit):
        visualize.main(["--checkpoint", str(smoke_run), "--planner", str(tmp_path / "none.pt"), "--out", str(tmp_path / "c")])
    assert "--planner: no map predictor file at" in capsys.readouterr().err and not (tmp_path / "c").exists()


def test_recorded_attention_has_every_head_and_layer_and_rows_sum_to_one(smoke_run):
    policy, config = load_policy(smoke_run)
    env = gym.make(config.env.id, render_mode="rgb_array", **config.env.kwargs)
    steps = visualize.record_episode(policy, env, seed=1)
    for step in steps:
        assert len(step["encoder"]) == config.model.n_layers
        n_real = int(step["obs"]["node_mask"].sum())
        for weights in step["encoder"]:
            assert weights.shape[0] == config.model.n_heads
            np.testing.assert_allclose(weights[:, :n_real].sum(-1), 1.0, rtol=1e-5)
            assert not weights[:, n_real:].any()  # padding rows are all zero
        np.testing.assert_allclose(step["probs"].sum(), 1.0, rtol=1e-5)
        p = env.unwrapped.pad
        assert step["belief"].shape == (env.unwrapped.belief.shape[0] - 2 * p, env.unwrapped.belief.shape[1] - 2 * p)
        assert step["probs"][step["obs"]["action_mask"] == 0].max(initial=0) == 0
    path = env.unwrapped.path  # every cell travelled: the robot stood on one of them at each decision
    assert steps[0]["cell"] == path[0] and all(step["cell"] in path for step in steps)


def test_bad_step_is_a_clear_error(smoke_run, tmp_path, capsys):
    with pytest.raises(SystemExit):
        visualize.main(["--checkpoint", str(smoke_run), "--out", str(tmp_path / "a"), "--at", "100000"])
    assert "--at 100000 is outside the episode's steps" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        visualize.main(["--checkpoint", str(smoke_run), "--out", str(tmp_path / "b"), "--at", "0", "--query", "999"])
    assert "--query 999 is not a node at step 0" in capsys.readouterr().err
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()  # nothing written


def test_the_routes_are_each_players_episode_on_the_drawn_map(smoke_run):
    policy, config = load_policy(smoke_run)
    env = gym.make(config.env.id, render_mode="rgb_array", **config.env.kwargs)
    finals = visualize.route_finals({"greedy": greedy, "agent": argmax_actor(policy)}, env, seed=5, options=None)
    for (title, frame), act in zip(finals.items(), (greedy, argmax_actor(policy))):
        result, _ = run_episode(env, act, seed=5)
        assert title == f"{title.split(':')[0]}: {result.steps} steps, {result.travel_distance:.1f} cells"
        assert frame.shape == env.render().shape


def test_a_checkpoint_from_another_observation_layout_is_a_usage_error(stale_checkpoint_run, tmp_path, capsys):
    with pytest.raises(SystemExit):
        visualize.main(["--checkpoint", str(stale_checkpoint_run), "--out", str(tmp_path / "out")])
    assert "retrain" in capsys.readouterr().err


def test_head_disagreement_is_the_mean_total_variation_between_heads():
    from viz.overlays import head_disagreement

    weights = np.zeros((3, 3, 3))
    weights[0, :2] = [1, 0, 0]  # head 0 attends to key 0
    weights[1, :2] = [0, 1, 0]  # head 1 to key 1: disjoint from head 0
    weights[2, :2] = [0.5, 0.5, 0]  # head 2 halfway: 0.5 from each
    assert head_disagreement(weights, n_real=2) == pytest.approx((1 + 0.5 + 0.5) / 3)
    assert head_disagreement(weights[[0, 0]], n_real=2) == 0
    assert np.isnan(head_disagreement(weights[:1], n_real=2))


@pytest.fixture(scope="module")
def one_head_run(tmp_path_factory):
    """A smoke run with one head, one update: another head count for the same env."""
    from learning.trainer import Trainer
    from tests.helpers import smoke_config

    run_dir = tmp_path_factory.mktemp("one_head")
    Trainer.create(smoke_config(run_dir, "model.n_heads=1", "ppo.total_timesteps=1"), run_dir).train(progress=False)
    return run_dir


def test_compare_draws_every_checkpoints_heads_on_the_same_states(smoke_run, one_head_run, tmp_path, capsys):
    _, config = load_policy(smoke_run)
    assert visualize.main(["--checkpoint", str(smoke_run), "--compare", str(one_head_run), "--out", str(tmp_path),
                           "--at", "0"]) == 0
    for layer in range(config.model.n_layers):
        assert (tmp_path / f"heads_compared_layer{layer}.png").stat().st_size > 0
    out = capsys.readouterr().out
    table = [line for line in out.splitlines() if line.startswith("| ")]
    assert table[0].startswith("| checkpoint | heads | layer 0 |")
    ours, theirs = table[1].split(" | "), table[2].split(" | ")  # after the header (the rule has no space)
    assert ours[:2] == [f"| {smoke_run.name}", str(config.model.n_heads)] and theirs[:2] == [f"| {one_head_run.name}", "1"]
    assert all(0 <= float(cell.strip(" |")) <= 1 for cell in ours[2:])
    assert all(cell.strip(" |") == "n/a" for cell in theirs[2:])


def test_compare_takes_a_run_against_its_own_earlier_checkpoint(smoke_run, tmp_path, capsys):
    early = smoke_run / "checkpoint_000001.pt"
    assert visualize.main(["--checkpoint", str(smoke_run), "--compare", str(early), "--out", str(tmp_path),
                           "--at", "0"]) == 0
    rows = [line.split(" | ")[0] for line in capsys.readouterr().out.splitlines() if line.startswith("| ")][1:]
    assert rows == [f"| {smoke_run.name}", f"| {smoke_run.name}/checkpoint_000001"]
    with pytest.raises(SystemExit):  # the same checkpoint twice is still refused, naming it
        visualize.main(["--checkpoint", str(smoke_run), "--compare", str(smoke_run), "--out", str(tmp_path)])
    assert f"another checkpoint is already named {smoke_run.name!r}" in capsys.readouterr().err


def test_compare_refuses_a_checkpoint_of_other_env_settings(smoke_run, tmp_path, capsys):
    from learning.trainer import Trainer
    from tests.helpers import smoke_config

    run_dir = tmp_path / "bigger"
    Trainer.create(smoke_config(run_dir, "env.kwargs.map_size=24", "ppo.total_timesteps=1"), run_dir).train(progress=False)
    with pytest.raises(SystemExit):
        visualize.main(["--checkpoint", str(smoke_run), "--compare", str(run_dir), "--out", str(tmp_path / "out")])
    assert "the states would not be its own" in capsys.readouterr().err


def test_compare_table_averages_over_every_state_of_the_first_maps(smoke_run, tmp_path, capsys):
    from learning.envs import make_env
    from run.seeding import eval_episode_seed
    from viz.overlays import head_disagreement

    early = smoke_run / "checkpoint_000001.pt"
    assert visualize.main(["--checkpoint", str(smoke_run), "--compare", str(early), "--maps", "2",
                           "--out", str(tmp_path), "--at", "0"]) == 0
    out = capsys.readouterr().out
    policy, config = load_policy(smoke_run)
    env = make_env(config.env)
    states = [step for i in range(2) for step in visualize.record_episode(policy, env, eval_episode_seed(0, i))]
    expected = np.mean([[head_disagreement(w, int(step["obs"]["node_mask"].sum())) for w in step["encoder"]]
                        for step in states], axis=0)
    assert f"head disagreement over {len(states)} states of 2 held-out map(s):" in out
    ours = next(line for line in out.splitlines() if line.startswith(f"| {smoke_run.name} |"))
    np.testing.assert_allclose([float(cell) for cell in ours.strip("| ").split(" | ")[2:]], expected, atol=5e-4)


def test_maps_without_compare_is_a_usage_error(smoke_run, tmp_path, capsys):
    with pytest.raises(SystemExit):
        visualize.main(["--checkpoint", str(smoke_run), "--maps", "3", "--out", str(tmp_path)])
    assert "--maps 3 averages the --compare table" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        visualize.main(["--checkpoint", str(smoke_run), "--compare", str(smoke_run / "checkpoint_000001.pt"),
                        "--maps", "0", "--out", str(tmp_path)])
    assert "--maps must be >= 1, got 0" in capsys.readouterr().err


def test_the_drawn_episode_takes_evaluates_moves_on_the_same_map(smoke_run, tmp_path):
    """One runner: visualize.py's moves are those evaluate.py's argmax actor takes, map for map,
    also on a map folder through --env (episode i plays map i)."""
    from env.episode import run_episode
    from graph_batch import argmax_actor
    from learning.envs import make_env, with_env_overrides
    from tests.map_folders import write_maps

    policy, config = load_policy(smoke_run)
    folder = write_maps(tmp_path / "maps", {"a.png": (16, 16), "b.png": (20, 16)})
    for overrides, options in (([], None), ([f"map_dir={folder}"], {"map_index": 1})):
        env = make_env(with_env_overrides(config.env, overrides))
        taken, choose = [], argmax_actor(policy)

        def act(obs, world):
            taken.append(choose(obs, world))
            return taken[-1]

        result, _ = run_episode(env, act, seed=5, options=options)
        steps = visualize.record_episode(policy, env, seed=5, options=options)
        assert [step["action"] for step in steps] == taken and len(taken) == result.steps
    out = tmp_path / "out"
    assert visualize.main(["--checkpoint", str(smoke_run), "--out", str(out), "--env", f"map_dir={folder}",
                           "--at", "0"]) == 0
    assert (out / "pointer.gif").exists()


def test_a_drawing_on_a_folders_training_part_says_so(smoke_run, tmp_path, capsys):
    from tests.map_folders import write_maps

    folder = write_maps(tmp_path / "maps", {f"{i}.png": (12, 12) for i in range(30)})  # both parts hold maps
    for split in ("train", "all"):
        assert visualize.main(["--checkpoint", str(smoke_run), "--out", str(tmp_path / split), "--at", "0",
                               "--env", f"map_dir={folder}", "--env", f"map_split={split}"]) == 0
        said = "map_split='train': playing the part of map_dir=" in capsys.readouterr().err
        assert said == (split == "train")
