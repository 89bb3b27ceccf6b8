"""Checkpoints that do not load, or do not fit: named, never loaded unsafely, never silently used."""
import shutil

import pytest
import torch
import yaml

import evaluate
from evaluation.play import load_policy
from learning.trainer import Trainer
from run.checkpoint import CheckpointError, checkpoint_path, checkpoint_update, load_checkpoint

CORRUPTIONS = {
    "truncated": lambda data: data[: len(data) // 2],
    "empty": lambda data: b"",
    "garbage": lambda data: b"\x00not a checkpoint\xff" * 100,
}


@pytest.fixture
def run_copy(smoke_run, tmp_path):
    """A copy of the smoke run (checkpoints 1, 2 and 3) to damage."""
    return shutil.copytree(smoke_run, tmp_path / "run")


@pytest.mark.parametrize("kind", sorted(CORRUPTIONS))
def test_resume_falls_back_to_the_newest_checkpoint_that_loads_and_says_so(run_copy, kind, capsys):
    newest = run_copy / "checkpoint_000003.pt"
    newest.write_bytes(CORRUPTIONS[kind](newest.read_bytes()))
    with pytest.raises(CheckpointError, match="checkpoint_000003.pt is not a readable checkpoint") as error:
        load_checkpoint(newest)
    assert "weights_only" not in str(error.value)  # never a hint towards unsafe loading
    trainer = Trainer.resume(run_copy)
    err = capsys.readouterr().err
    assert "checkpoint_000003.pt is not a readable checkpoint" in err and "resuming from" in err
    assert trainer.update == 2
    trainer.collector.close()


def test_evaluation_names_the_bad_checkpoint_and_the_good_ones(run_copy, capsys):
    (run_copy / "checkpoint_000003.pt").write_bytes(b"")
    with pytest.raises(SystemExit) as exit_code:
        evaluate.main(["--checkpoint", str(run_copy), "--episodes", "1"])
    assert exit_code.value.code == 2
    err = capsys.readouterr().err
    assert "checkpoint_000003.pt is not a readable checkpoint" in err
    assert "readable checkpoints beside it: checkpoint_000002.pt, checkpoint_000001.pt" in err


def test_an_edited_config_is_refused_naming_the_keys_that_differ(run_copy):
    config = yaml.safe_load((run_copy / "config.yaml").read_text())
    config["model"]["n_heads"] = 1  # the smoke network has 2; the weights' shapes do not change
    (run_copy / "config.yaml").write_text(yaml.safe_dump(config))
    for load in (Trainer.resume, load_policy):
        with pytest.raises(CheckpointError, match=r"another model config than its config.yaml says "
                                                  r"\(n_heads: 2 in the checkpoint, 1 in config.yaml\)"):
            load(run_copy)


def test_weights_load_under_another_attention_implementation(run_copy):
    config = yaml.safe_load((run_copy / "config.yaml").read_text())
    assert config["model"]["attention_impl"] != "reference"
    config["model"]["attention_impl"] = "reference"  # the same function computed another way
    (run_copy / "config.yaml").write_text(yaml.safe_dump(config))
    policy, _ = load_policy(run_copy)
    weights = load_checkpoint(run_copy / "checkpoint_000003.pt")["model"]
    assert all(torch.equal(value, weights[key]) for key, value in policy.state_dict().items())
    config["model"]["n_layers"] += 1  # still refused alongside it, naming only the key that matters
    (run_copy / "config.yaml").write_text(yaml.safe_dump(config))
    with pytest.raises(CheckpointError, match=r"says \(n_layers: \d in the checkpoint, \d in config.yaml\)"):
        load_policy(run_copy)


def test_weights_of_other_shapes_are_named_with_both_shapes(run_copy):
    config = yaml.safe_load((run_copy / "config.yaml").read_text())
    config["model"]["ff_dim"] = 48
    (run_copy / "config.yaml").write_text(yaml.safe_dump(config))
    state = load_checkpoint(run_copy / "checkpoint_000003.pt")
    del state["model_config"]  # as a checkpoint of an older version, which did not record it
    torch.save(state, run_copy / "checkpoint_000003.pt")
    with pytest.raises(CheckpointError, match=r"does not fit this network: actor_trunk.encoder.layers.0."
                                              r"feed_forward.0.weight: \[32, 16\] in the checkpoint, \[48, 16\]"):
        load_policy(run_copy)


def test_a_checkpoints_update_is_read_from_its_name(tmp_path):
    assert checkpoint_update(checkpoint_path(tmp_path, 45)) == 45
    assert checkpoint_update(tmp_path / "checkpoint_1000000.pt") == 1_000_000  # past six digits
    with pytest.raises(ValueError, match="notes.txt is not named like a checkpoint"):
        checkpoint_update(tmp_path / "notes.txt")
