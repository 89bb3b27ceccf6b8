"""Pretrained files (weights and config only) and ``--init-from``: a new run from trained weights."""
import pytest
import torch

import evaluate
import train
from env.episode import run_episode
from env.observation import N_NODE_FEATURES, node_feature_names
from evaluation.play import load_policy
from graph_batch import argmax_actor, collate
from learning.envs import make_env, with_env_overrides
from learning.trainer import Trainer
from run.checkpoint import CheckpointError, latest_checkpoint, load_checkpoint
from run.pretrained import FORMAT, export, with_input_columns
from run.pretrained import main as export_main
from tests.helpers import SMOKE, smoke_config


def test_a_pretrained_file_holds_the_weights_and_config_and_plays_as_the_run_does(smoke_run, tmp_path):
    out = tmp_path / "agent.pt"
    assert export_main([str(smoke_run), str(out)]) == 0
    state = torch.load(out, weights_only=True)
    assert sorted(state) == ["config", "format", "model", "trained"] and state["format"] == FORMAT
    newest = load_checkpoint(latest_checkpoint(smoke_run))
    assert state["trained"] == {"from": latest_checkpoint(smoke_run).name, "update": newest["update"],
                                "global_step": newest["global_step"]}
    assert out.stat().st_size < latest_checkpoint(smoke_run).stat().st_size  # no optimizer state
    shipped, config = load_policy(out)
    trained, run_config = load_policy(smoke_run)
    assert config == run_config
    for name, tensor in trained.state_dict().items():
        assert torch.equal(shipped.state_dict()[name], tensor), name
    env = make_env(config.env)
    a, _ = run_episode(env, argmax_actor(shipped), seed=11)
    b, _ = run_episode(env, argmax_actor(trained), seed=11)
    assert a == b and a.steps > 0


def test_evaluate_takes_a_pretrained_file(smoke_run, tmp_path, capsys):
    export(smoke_run, tmp_path / "agent.pt")
    assert evaluate.main(["--checkpoint", str(tmp_path / "agent.pt"), "--episodes", "1", "--policy", "agent"]) == 0
    assert "| agent (argmax) |" in capsys.readouterr().out


def test_env_overrides_are_recorded_and_a_bad_one_writes_nothing(smoke_run, tmp_path, capsys):
    out = tmp_path / "agent.pt"
    export(smoke_run, out, ("map_size=20",))
    assert torch.load(out, weights_only=True)["config"]["env"]["kwargs"]["map_size"] == 20
    bad = tmp_path / "bad.pt"
    assert export_main([str(smoke_run), str(bad), "--env", "sensor_range=0"]) == 2
    assert "sensor_range must be an int >= 1, got 0" in capsys.readouterr().err and not bad.exists()
    assert export_main([str(tmp_path / "nowhere"), str(bad)]) == 2 and not bad.exists()


@pytest.mark.parametrize("source", ["run folder", "pretrained file"])
def test_init_from_starts_a_new_run_from_the_weights_alone(smoke_run, tmp_path, source):
    weights = smoke_run if source == "run folder" else tmp_path / "agent.pt"
    if source == "pretrained file":
        export(smoke_run, weights)
    trainer = Trainer.create(smoke_config(tmp_path / "new", f"run.init_from={weights}"), tmp_path / "new")
    trained, _ = load_policy(smoke_run)
    for name, tensor in trained.state_dict().items():
        assert torch.equal(trainer.policy.state_dict()[name], tensor), name
    assert trainer.update == 0 and trainer.global_step == 0
    trainer.train(max_updates=1, progress=False)
    assert load_checkpoint(latest_checkpoint(tmp_path / "new"))["update"] == 1
    assert Trainer.resume(tmp_path / "new").update == 1  # a resume takes its own checkpoint, not init_from


def test_init_from_weights_without_context_features_plays_as_they_do_until_trained(smoke_run, tmp_path):
    trainer = Trainer.create(smoke_config(tmp_path / "new", f"run.init_from={smoke_run}",
                                          "env.kwargs.context_features=true"), tmp_path / "new")
    trained, config = load_policy(smoke_run)
    embedding = trainer.policy.actor_trunk.initial_embedding.weight
    assert embedding.shape[1] == N_NODE_FEATURES + 4 and not embedding[:, N_NODE_FEATURES:].any()
    torch.testing.assert_close(embedding[:, :N_NODE_FEATURES], trained.actor_trunk.initial_embedding.weight,
                               rtol=0, atol=0)
    plain, rich = make_env(config.env), make_env(trainer.config.env)
    a, _ = plain.reset(seed=5)
    b, _ = rich.reset(seed=5)
    assert b["node_features"][:, N_NODE_FEATURES:].any()  # the new columns carry something to ignore
    with torch.no_grad():
        torch.testing.assert_close(trainer.policy(collate(b)), trained(collate(a)), rtol=0, atol=0)
    trainer.train(max_updates=1, progress=False)
    assert trainer.policy.actor_trunk.initial_embedding.weight[:, N_NODE_FEATURES:].any()  # now they count
    _, reloaded = load_policy(tmp_path / "new")
    assert reloaded.env.kwargs["context_features"] is True


def test_input_columns_move_to_their_features_places_whatever_optional_features_come_between():
    had = node_feature_names(privileged_features=True)
    wanted = node_feature_names(context_features=True, privileged_features=True)
    weight = torch.arange(3.0 * len(had)).view(3, len(had))
    moved = with_input_columns({"actor_trunk.initial_embedding.weight": weight, "other": weight}, had, wanted)
    for column, name in enumerate(wanted):  # by hand: each feature's column where its name now is
        expected = weight[:, had.index(name)] if name in had else torch.zeros(3)
        assert torch.equal(moved["actor_trunk.initial_embedding.weight"][:, column], expected), name
    assert moved["other"] is weight
    assert with_input_columns({"x.initial_embedding.weight": weight}, had, had)["x.initial_embedding.weight"] is weight


def test_init_from_weights_of_another_network_is_refused_before_anything_is_written(smoke_run, tmp_path, capsys):
    run_dir = tmp_path / "new"
    assert train.main(["--config", str(SMOKE), f"run.run_dir={run_dir}", "model.n_heads=1",
                       "--init-from", str(smoke_run)]) == 2
    assert "n_heads: 2 in the checkpoint, 1 in this run's config" in capsys.readouterr().err
    assert not (run_dir / "config.yaml").exists()
    with pytest.raises(CheckpointError, match="n_heads"):
        Trainer.create(smoke_config(run_dir, "model.n_heads=1", f"run.init_from={smoke_run}"), run_dir)


def test_overrides_may_follow_init_from(smoke_run, tmp_path):
    run_dir = tmp_path / "new"
    assert train.main(["--config", str(SMOKE), "--init-from", str(smoke_run), f"run.run_dir={run_dir}",
                       "ppo.total_timesteps=32", "run.image_every=0"]) == 0
    assert load_checkpoint(latest_checkpoint(run_dir))["update"] == 1


def test_resume_takes_no_init_from(smoke_run, capsys):
    with pytest.raises(SystemExit):
        train.main(["--resume", str(smoke_run), "--init-from", str(smoke_run)])
    assert "overrides and --init-from are not allowed" in capsys.readouterr().err


def test_a_pretrained_file_plays_on_other_maps_through_env_overrides(smoke_run, tmp_path):
    export(smoke_run, tmp_path / "agent.pt")
    policy, config = load_policy(tmp_path / "agent.pt")
    env = make_env(with_env_overrides(config.env, ["map_size=24"]))
    result, _ = run_episode(env, argmax_actor(policy), seed=3)
    assert result.steps > 0
