"""End-to-end training on configs/smoke.yaml: outputs, tags, resumption, failure handling."""
import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest
import torch
import yaml
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

import evaluate
import train
from config import ConfigError, load_config
from env.maps import MAP_FAMILIES
from evaluation.play import load_policy
from graph_batch import forward_observations
from learning.collector import VectorEnvCollector
from learning.envs import make_env, with_env_overrides
from learning.gae import compute_gae
from learning.tags import IMAGE_TAGS, SCALAR_TAGS, TEXT_TAGS
from learning.trainer import Trainer
from run.checkpoint import latest_checkpoint, load_checkpoint
from run.seeding import train_episode_seed
from tests.helpers import ROOT, SMOKE, greedy_return_by_hand, smoke_config
from tests.map_folders import write_maps


def test_run_folder_holds_config_events_and_checkpoints(smoke_run):
    assert load_config(smoke_run / "config.yaml") == smoke_config(smoke_run)
    assert sorted(p.name for p in smoke_run.glob("checkpoint_*.pt")) == [f"checkpoint_00000{i}.pt" for i in (1, 2, 3)]
    assert load_checkpoint(latest_checkpoint(smoke_run))["global_step"] == 96


def test_events_carry_every_tag_of_the_contract(smoke_run):
    events = EventAccumulator(str(smoke_run), size_guidance={"scalars": 0, "images": 0, "tensors": 0})
    events.Reload()
    tags = events.Tags()
    assert set(tags["scalars"]) == set(SCALAR_TAGS), set(SCALAR_TAGS) ^ set(tags["scalars"])  # all, and no other
    assert set(tags["images"]) == set(IMAGE_TAGS)
    assert any(tag.startswith(next(iter(TEXT_TAGS))) for tag in tags["tensors"])
    coverage = [event.value for event in events.Scalars("charts/coverage")]
    assert coverage and all(0.0 < c <= 1.0 for c in coverage)
    for tag in ("perf/collection_seconds", "perf/update_seconds"):  # one per update, at its global step
        assert [(e.step, e.value > 0) for e in events.Scalars(tag)] == [(32, True), (64, True), (96, True)], tag


def test_the_training_page_explains_every_tag():
    page = (ROOT / "docs/training.md").read_text()
    for tag in [*SCALAR_TAGS, *IMAGE_TAGS, *TEXT_TAGS]:
        assert f"`{tag}`" in page, tag


def test_evaluate_runs_on_the_trained_checkpoint(smoke_run, tmp_path, capsys):
    out = tmp_path / "eval.json"
    assert evaluate.main(["--checkpoint", str(smoke_run), "--episodes", "2", "--json", str(out),
                          "--gif", str(tmp_path / "ep.gif")]) == 0
    table = capsys.readouterr().out
    for name in ("agent (argmax)", "random", "nearest_frontier", "greedy"):
        assert f"| {name} |" in table
    assert "| travel / nearest frontier | travel / greedy |" in table
    assert (tmp_path / "ep.gif").stat().st_size > 0
    report = json.loads(out.read_text())
    episodes = report["per_episode"]
    assert {name: len(results) for name, results in episodes.items()} == dict.fromkeys(episodes, 2)
    # The per-map ratio to greedy, recomputed by hand from the per-episode records.
    pairs = [(a["travel_distance"], g["travel_distance"]) for a, g in zip(episodes["agent"], episodes["greedy"])
             if a["success"] and g["success"]]
    if pairs:
        assert report["travel_ratio_to_greedy"]["agent"][0] == pytest.approx(sum(a / g for a, g in pairs) / len(pairs))
    assert report["travel_ratio_to_greedy"]["agent"][2] == len(pairs)
    assert report["summaries"]["greedy"]["success_rate"][0] == pytest.approx(
        sum(e["success"] for e in episodes["greedy"]) / 2)
    families = [[e["map_family"] for e in results] for results in episodes.values()]
    assert all(f == families[0] for f in families) and set(families[0]) <= set(MAP_FAMILIES)  # the same maps for all


@pytest.mark.parametrize("gae_values", ["critic", "greedy_rollout"])
def test_killed_and_resumed_run_equals_an_uninterrupted_one(tmp_path, gae_values):
    straight, interrupted = tmp_path / "straight", tmp_path / "interrupted"
    overrides = ("ppo.total_timesteps=128", "run.image_every=0", f"ppo.gae_values={gae_values}")
    Trainer.create(smoke_config(straight, *overrides), straight).train()
    Trainer.create(smoke_config(interrupted, *overrides), interrupted).train(max_updates=2)
    Trainer.resume(interrupted).train()
    a, b = load_checkpoint(latest_checkpoint(straight)), load_checkpoint(latest_checkpoint(interrupted))
    assert a["update"] == b["update"] == 4
    for key in ("episodes", "actions", "episode_return", "episode_length", "recent", "global_step"):
        assert a[key] == b[key], key
    for name, tensor in a["model"].items():
        assert torch.equal(tensor, b["model"][name]), name


def test_a_run_saved_before_forward_groups_resumes_as_it_began(tmp_path):
    straight, interrupted = tmp_path / "straight", tmp_path / "interrupted"
    overrides = ("ppo.total_timesteps=128", "run.image_every=0", "env.num_envs=4", "env.forward_group=1")
    Trainer.create(smoke_config(straight, *overrides), straight).train()
    Trainer.create(smoke_config(interrupted, *overrides), interrupted).train(max_updates=2)
    saved = yaml.safe_load((interrupted / "config.yaml").read_text())
    del saved["env"]["forward_group"]  # as a run saved before the setting existed
    (interrupted / "config.yaml").write_text(yaml.safe_dump(saved, sort_keys=False))
    resumed = Trainer.resume(interrupted)
    assert resumed.config.env.forward_group == 1  # not today's default of 4
    resumed.train()
    a, b = load_checkpoint(latest_checkpoint(straight)), load_checkpoint(latest_checkpoint(interrupted))
    assert a["actions"] == b["actions"]
    for name, tensor in a["model"].items():
        assert torch.equal(tensor, b["model"][name]), name


def test_keep_checkpoints_deletes_the_older_ones_and_the_run_still_resumes(tmp_path):
    overrides = ("ppo.total_timesteps=128", "run.image_every=0", "run.keep_checkpoints=2")  # 4 updates, 1 each
    Trainer.create(smoke_config(tmp_path, *overrides), tmp_path).train(max_updates=3)
    assert sorted(p.name for p in tmp_path.glob("checkpoint_*.pt")) == ["checkpoint_000002.pt", "checkpoint_000003.pt"]
    Trainer.resume(tmp_path).train()
    assert sorted(p.name for p in tmp_path.glob("checkpoint_*.pt")) == ["checkpoint_000003.pt", "checkpoint_000004.pt"]
    assert load_checkpoint(latest_checkpoint(tmp_path))["update"] == 4


def test_keep_checkpoints_never_counts_an_unreadable_newer_one_in_place_of_an_older(tmp_path):
    overrides = ("ppo.total_timesteps=128", "run.image_every=0", "run.keep_checkpoints=1")
    Trainer.create(smoke_config(tmp_path, *overrides), tmp_path).train(max_updates=1)
    (tmp_path / "checkpoint_000003.pt").write_bytes(b"torn")  # newer than anything readable
    trainer = Trainer.resume(tmp_path)  # passes over it, from update 1
    trainer.train(max_updates=1)
    assert sorted(p.name for p in tmp_path.glob("checkpoint_*.pt")) == ["checkpoint_000002.pt", "checkpoint_000003.pt"]
    assert load_checkpoint(tmp_path / "checkpoint_000002.pt")["update"] == 2


@pytest.mark.parametrize("value", ["-1", "1.5"])
def test_keep_checkpoints_must_be_a_count(tmp_path, value):
    with pytest.raises(ConfigError, match="keep_checkpoints"):
        smoke_config(tmp_path, f"run.keep_checkpoints={value}")


def test_a_run_over_a_map_folder_resumes_exactly(tmp_path):
    straight, interrupted = tmp_path / "straight", tmp_path / "interrupted"
    overrides = ("ppo.total_timesteps=128", "run.image_every=0",
                 f"env.kwargs.map_dir={write_maps(tmp_path / 'maps')}", "env.kwargs.max_steps=10")
    Trainer.create(smoke_config(straight, *overrides), straight).train()
    Trainer.create(smoke_config(interrupted, *overrides), interrupted).train(max_updates=2)
    Trainer.resume(interrupted).train()
    a, b = load_checkpoint(latest_checkpoint(straight)), load_checkpoint(latest_checkpoint(interrupted))
    assert a["update"] == b["update"] == 4 and min(a["episodes"]) >= 3  # several maps played per env
    for key in ("episodes", "actions", "episode_return", "episode_length", "recent", "global_step"):
        assert a[key] == b[key], key
    for name, tensor in a["model"].items():
        assert torch.equal(tensor, b["model"][name]), name


@pytest.mark.parametrize("vector", ["sync", "processes"])
def test_greedy_rollout_values_are_greedys_return_from_each_state_of_the_rollout(tmp_path, vector):
    """The collector's W(s_t), and W(final state) of truncated episodes across autoresets, against
    greedy played by hand from the same states, rebuilt from the episode seeds and actions."""
    overrides = ("ppo.gae_values=greedy_rollout", "ppo.num_steps=64", "env.kwargs.map_size=12",
                 "env.kwargs.max_steps=20", f"env.vector={vector}")
    trainer = Trainer.create(smoke_config(tmp_path, *overrides), tmp_path)
    rollout = trainer.collector.collect(trainer.policy)
    config = trainer.config
    assert rollout.truncated.any() and rollout.terminated.any()  # both ends of an episode are covered
    for i in range(config.env.num_envs):
        env, episode = make_env(config.env).unwrapped, 0
        obs, _ = env.reset(seed=train_episode_seed(config.seed, i, episode))
        for t in range(config.ppo.num_steps):
            assert rollout.bootstrap_values[t, i].item() == pytest.approx(greedy_return_by_hand(env, obs), abs=1e-4)
            obs, _, terminated, truncated, _ = env.step(int(rollout.actions[t, i]))
            assert (terminated, truncated) == (rollout.terminated[t, i], rollout.truncated[t, i])
            if truncated:
                assert rollout.final_bootstrap_values[t, i].item() == pytest.approx(greedy_return_by_hand(env, obs), abs=1e-4)
            else:
                assert rollout.final_bootstrap_values[t, i].item() == 0.0
            if terminated or truncated:
                episode += 1
                obs, _ = env.reset(seed=train_episode_seed(config.seed, i, episode))
        assert rollout.next_bootstrap_values[i].item() == pytest.approx(greedy_return_by_hand(env, obs), abs=1e-4)
    trainer.collector.close()


@pytest.mark.parametrize("gae_values", ["critic", "greedy_rollout"])
def test_gae_bootstraps_from_the_configured_values(tmp_path, gae_values, monkeypatch):
    seen = {}

    def spy(rewards, values, terminated, truncated, final_values, next_value, gamma, gae_lambda):
        seen.update(values=values, final_values=final_values, next_value=next_value)
        return compute_gae(rewards, values, terminated, truncated, final_values, next_value, gamma, gae_lambda)

    def collect(self, policy):
        seen["rollout"] = collect_for_real(self, policy)
        with torch.no_grad():  # the critic's value of the observation after the last step, computed here
            seen["critic_next_value"] = forward_observations(policy, self.obs)[1]
        return seen["rollout"]

    collect_for_real = VectorEnvCollector.collect
    monkeypatch.setattr("learning.trainer.compute_gae", spy)
    monkeypatch.setattr(VectorEnvCollector, "collect", collect)
    overrides = (f"ppo.gae_values={gae_values}", "run.image_every=0", "env.kwargs.max_steps=8", "env.vector=sync")
    trainer = Trainer.create(smoke_config(tmp_path, *overrides), tmp_path)
    trainer.train(max_updates=1)
    rollout = seen["rollout"]
    truncated_somewhere = rollout.truncated.any() and (seen["final_values"] != 0).any()
    assert truncated_somewhere and ((seen["final_values"] != 0) <= rollout.truncated).all()
    if gae_values == "critic":  # the values the actions were sampled with, and the critic's next value
        assert torch.equal(seen["values"], rollout.values)
        torch.testing.assert_close(seen["next_value"], seen["critic_next_value"])
    else:  # W, which is not the critic's
        assert not torch.equal(seen["values"], rollout.values)
        assert torch.equal(seen["next_value"], torch.as_tensor(trainer.collector.bootstrap.latest, dtype=torch.float32))
    assert seen["values"] is rollout.bootstrap_values and seen["final_values"] is rollout.final_bootstrap_values


def test_sigkill_mid_run_then_resume_completes(tmp_path):
    run_dir = tmp_path / "killed"
    command = [sys.executable, "train.py", "--config", str(SMOKE), f"run.run_dir={run_dir}",
               "ppo.total_timesteps=100000", "run.image_every=0"]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while latest_checkpoint(run_dir) is None and time.time() < deadline and process.poll() is None:
        time.sleep(0.2)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    saved = load_checkpoint(latest_checkpoint(run_dir))  # intact despite the kill
    trainer = Trainer.resume(run_dir)
    assert trainer.update == saved["update"] >= 1
    trainer.train(max_updates=1)
    assert load_checkpoint(latest_checkpoint(run_dir))["update"] == saved["update"] + 1


@pytest.mark.parametrize("learning_rate", [1e3, 1e6])
def test_a_diverging_run_stops_naming_the_step_and_keeps_the_last_good_checkpoint(tmp_path, capsys, learning_rate):
    """A learning rate that blows up: caught at the gradient (1e3) or at the outputs (1e6), never
    by torch's Categorical dumping NaN tensors, and nothing diverged reaches a checkpoint."""
    assert train.main(["--config", str(SMOKE), f"run.run_dir={tmp_path}", "run.image_every=0",
                       "ppo.total_timesteps=32"]) == 0  # one good update: checkpoint 1
    config = yaml.safe_load((tmp_path / "config.yaml").read_text())
    config["ppo"].update(learning_rate=learning_rate, total_timesteps=128)  # the same network, a wild step size
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    capsys.readouterr()
    assert train.main(["--resume", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "nan, nan" not in err  # one line, no tensors dumped
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and re.search(r"(non-finite gradient|outputs are not finite) at global step 64", errors[0])
    kept = load_checkpoint(latest_checkpoint(tmp_path))
    assert kept["update"] == 1 and all(torch.isfinite(t).all() for t in kept["model"].values())


def test_an_existing_run_is_never_overwritten(smoke_run):
    with pytest.raises(FileExistsError, match="--resume"):
        Trainer.create(smoke_config(smoke_run), smoke_run)


def test_bad_env_kwargs_are_a_config_error_naming_the_key(tmp_path):
    with pytest.raises(ConfigError, match="map_sise"):
        Trainer.create(smoke_config(tmp_path, "env.kwargs.map_sise=20"), tmp_path)


def test_cli_reports_config_errors_without_a_traceback(capsys):
    assert train.main(["--config", str(SMOKE), "model.n_head=2"]) == 2
    assert "unknown key 'model.n_head'" in capsys.readouterr().err


def test_evaluate_runs_one_baseline_alone_and_refuses_agent_without_checkpoint(capsys):
    assert evaluate.main(["--policy", "nearest_frontier", "--episodes", "2", "--config", str(SMOKE)]) == 0
    table = capsys.readouterr().out
    assert "| nearest_frontier |" in table and "| random |" not in table
    with pytest.raises(SystemExit):
        evaluate.main(["--policy", "agent", "--episodes", "2"])
    assert "--policy agent needs --checkpoint" in capsys.readouterr().err


def test_evaluate_changes_the_environment_for_the_evaluation_only(smoke_run, tmp_path, capsys):
    out = tmp_path / "eval.json"
    assert evaluate.main(["--checkpoint", str(smoke_run), "--episodes", "1", "--policy", "agent",
                          "--env", "map_size=20", "--env", "map_family=maze", "--json", str(out)]) == 0
    assert json.loads(out.read_text())["env"]["kwargs"] == {"map_size": 20, "max_steps": 24, "map_family": "maze"}
    assert load_config(smoke_run / "config.yaml").env.kwargs["map_size"] == 16  # the run itself is untouched
    env = make_env(with_env_overrides(smoke_config(tmp_path).env, ["map_size=20"]))
    assert env.unwrapped.height == env.unwrapped.width == 20
    for bad, message in (("map_sise=20", "unknown GridExplore parameter.*map_sise"),
                         ("map_size=5", "map_size must be an int >= 12, got 5"),
                         ("map_size", "must look like key=value")):
        with pytest.raises(SystemExit):
            evaluate.main(["--checkpoint", str(smoke_run), "--episodes", "1", "--env", bad])
        assert re.search(message, capsys.readouterr().err), bad


def test_a_checkpoint_from_another_observation_layout_is_refused_clearly(stale_checkpoint_run):
    with pytest.raises(ValueError, match="guidepost.*retrain"):
        load_policy(stale_checkpoint_run)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a machine without CUDA")
@pytest.mark.parametrize("override, message", [
    ("run.device=cuda", "run.device=cuda but no CUDA device is available"),
    ("env.kwargs.sensor_range=1000", "sensor_range must be <= 64, got 1000"),  # the env refuses, not the config
    ("env.kwargs.map_size=5000", "map_size must be <= 1024, got 5000"),
    ("env.kwargs.no_such_key=1", "no_such_key"),
])
def test_settings_that_fail_only_in_the_env_or_device_are_refused_before_anything_is_written(
        tmp_path, capsys, override, message):
    run_dir = tmp_path / "run"
    assert train.main(["--config", str(SMOKE), f"run.run_dir={run_dir}", override]) == 2
    assert message in capsys.readouterr().err
    assert not run_dir.exists()
