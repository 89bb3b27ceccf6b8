"""Pretrained files (weights and config only) and ``--init-from``: a new run from trained weights."""
import pytest
import torch

import evaluate
import train
from env.observation import N_NODE_FEATURES, node_feature_names
from graph_batch import collate
from rl.checkpoint import CheckpointError, latest_checkpoint, load_checkpoint
from rl.evaluation import argmax_actor, load_policy, run_episode
from rl.envs import make_env, with_env_overrides
from predictor import MapPredictor
from predictor.files import predictor_file
from predictor.network import BELIEF_CODES
from rl.pretrained import FORMAT, export, main as export_main, read_planner, retuned_planner
from rl.trainer import Trainer, with_input_columns
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


def test_a_pretrained_file_carries_a_map_predictor_and_keeps_it_when_rewritten(smoke_run, tmp_path, capsys):
    net = MapPredictor(width=4)
    predictor = tmp_path / "predictor.pt"
    torch.save(predictor_file(net, {"maps": 1}), predictor)
    out = tmp_path / "agent.pt"
    assert export_main([str(smoke_run), str(out), "--planner", str(predictor), "--prior-weight", "2"]) == 0
    assert "with its planner" in capsys.readouterr().out
    state = torch.load(out, weights_only=True)
    assert sorted(state) == ["config", "format", "model", "planner", "trained"]
    carried = read_planner(out)
    belief = torch.randint(0, BELIEF_CODES, (1, 9, 11), dtype=torch.int8)
    assert carried.prior_weight == 2.0 and torch.equal(carried.predictor(belief), net.eval()(belief))
    assert carried.opening is None  # written without --opening: the guess plays unopened
    assert read_planner(smoke_run) is None and read_planner(export_with_no_planner(smoke_run, tmp_path)) is None
    again = tmp_path / "again.pt"
    export(out, again, ("map_size=20",))  # rewritten: the planner stays
    assert read_planner(again).prior_weight == 2.0
    assert torch.equal(read_planner(again).predictor(belief), net(belief))
    opened = tmp_path / "opened.pt"
    assert export_main([str(smoke_run), str(opened), "--planner", str(predictor), "--opening", "4"]) == 0
    assert read_planner(opened).opening == 4 and read_planner(opened).prior_weight == 0.5
    export(opened, again)  # rewritten: the opening stays with the planner
    assert read_planner(again).opening == 4


def test_a_carried_planner_is_retuned_without_naming_its_predictor(smoke_run, tmp_path, capsys):
    net = MapPredictor(width=4)
    torch.save(predictor_file(net, {"maps": 1}), tmp_path / "predictor.pt")
    opened, retuned = tmp_path / "opened.pt", tmp_path / "retuned.pt"
    assert export_main([str(smoke_run), str(opened), "--planner", str(tmp_path / "predictor.pt"), "--opening", "4"]) == 0
    assert export_main([str(opened), str(retuned), "--prior-weight", "0.25"]) == 0
    belief = torch.randint(0, BELIEF_CODES, (1, 9, 11), dtype=torch.int8)
    planner = read_planner(retuned)
    assert (planner.prior_weight, planner.opening) == (0.25, 4)  # the opening stays
    assert torch.equal(planner.predictor(belief), net.eval()(belief))
    assert export_main([str(retuned), str(retuned), "--opening", "5"]) == 0
    assert (read_planner(retuned).prior_weight, read_planner(retuned).opening) == (0.25, 5)  # the weight stays
    assert export_main([str(retuned), str(retuned), "--opening", "0"]) == 0  # as evaluate.py's --opening 0
    assert (read_planner(retuned).prior_weight, read_planner(retuned).opening) == (0.25, None)
    assert torch.load(retuned, weights_only=True)["planner"].keys() == {"predictor", "prior_weight"}
    assert export_main([str(smoke_run), str(opened), "--planner", str(tmp_path / "predictor.pt"), "--opening", "0"]) == 0
    assert read_planner(opened).opening is None
    capsys.readouterr()
    assert export_main([str(retuned), str(tmp_path / "bad.pt"), "--prior-weight", "-1"]) == 2
    assert "prior weight -1.0: a weight must be 0 or more" in capsys.readouterr().err
    assert not (tmp_path / "bad.pt").exists()


def export_with_no_planner(run, tmp_path):
    export(run, tmp_path / "plain.pt")
    return tmp_path / "plain.pt"


def test_a_bad_planner_writes_nothing(smoke_run, tmp_path, capsys):
    out = tmp_path / "agent.pt"
    (tmp_path / "not_a_predictor.pt").write_text("x")
    torch.save(predictor_file(MapPredictor(width=4), {}), tmp_path / "p.pt")
    cases = [(["--planner", str(tmp_path / "missing.pt")], "no map predictor file at"),
             (["--planner", str(tmp_path / "not_a_predictor.pt")], "does not load as a map predictor file"),
             (["--planner", str(tmp_path / "p.pt"), "--prior-weight", "-1"], "prior weight -1.0: a weight must be 0 or more"),
             (["--planner", str(tmp_path / "p.pt"), "--opening", "-1"],
              "opening -1: the side of a square of free cells, 1 or more (0: not opened)")]
    for argv, message in cases:
        assert export_main([str(smoke_run), str(out), *argv]) == 2
        assert message in capsys.readouterr().err and not out.exists()
    for option in ("--prior-weight", "--opening"):  # a run folder carries no planner to change
        assert export_main([str(smoke_run), str(out), option, "1"]) == 2
        assert "carries no planner to change: name its map predictor with --planner" in capsys.readouterr().err
        assert not out.exists()


def test_a_command_lines_planner_settings_mean_the_same_for_a_planner_and_a_carried_entry(smoke_run, tmp_path):
    torch.save(predictor_file(MapPredictor(width=4), {}), tmp_path / "p.pt")
    opened = tmp_path / "opened.pt"
    assert export_main([str(smoke_run), str(opened), "--planner", str(tmp_path / "p.pt"), "--opening", "4",
                        "--prior-weight", "0.25"]) == 0
    carried = read_planner(opened)
    for prior_weight, opening, expected in [(None, None, (0.25, 4)), (1.0, None, (1.0, 4)), (None, 0, (0.25, None)),
                                            (0.0, 6, (0.0, 6))]:
        played = carried.overridden(prior_weight, opening)  # what evaluate.py plays
        entry = retuned_planner(opened, prior_weight, opening)  # what python -m rl.pretrained writes
        assert (played.prior_weight, played.opening) == (entry["prior_weight"], entry.get("opening")) == expected
    for prior_weight, opening, message in [(-1.0, None, "prior weight -1.0"), (None, -2, "opening -2")]:
        with pytest.raises(ValueError, match=message):
            carried.overridden(prior_weight, opening)
        with pytest.raises(ValueError, match=message):
            retuned_planner(opened, prior_weight, opening)
