"""visualize.py on a trained smoke run: every picture is written, and the weights it draws are distributions."""
import gymnasium as gym
import numpy as np
import pytest
from PIL import Image

import visualize
from rl.evaluation import load_policy


def test_writes_the_gif_and_two_pictures_per_encoder_layer(smoke_run, tmp_path):
    assert visualize.main(["--checkpoint", str(smoke_run), "--out", str(tmp_path), "--at", "0"]) == 0
    _, config = load_policy(smoke_run)
    names = sorted(p.name for p in tmp_path.iterdir())
    layers = range(config.model.n_layers)
    expected = ["pointer.gif"] + [f"attention_{kind}_layer{L}.png" for kind in ("map", "matrix") for L in layers]
    assert names == sorted(expected)
    gif = Image.open(tmp_path / "pointer.gif")
    assert gif.n_frames > 1


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
        assert step["probs"][step["obs"]["action_mask"] == 0].max(initial=0) == 0


def test_bad_step_is_a_clear_error(smoke_run, tmp_path, capsys):
    with pytest.raises(SystemExit):
        visualize.main(["--checkpoint", str(smoke_run), "--out", str(tmp_path), "--at", "100000"])
    assert "--at 100000 is outside the episode's steps" in capsys.readouterr().err


def test_a_checkpoint_from_another_observation_layout_is_a_usage_error(stale_checkpoint_run, tmp_path, capsys):
    with pytest.raises(SystemExit):
        visualize.main(["--checkpoint", str(stale_checkpoint_run), "--out", str(tmp_path / "out")])
    assert "retrain" in capsys.readouterr().err
