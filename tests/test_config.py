"""Typed configuration: YAML files, dotted overrides, and errors that name the key."""
from pathlib import Path

import pytest

from config import Config, ConfigError, ModelConfig, load_config, save_config

CONFIGS = sorted(Path(__file__).parents[1].joinpath("configs").glob("*.yaml"))


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_every_shipped_config_loads(path):
    assert isinstance(load_config(path), Config)


def test_reference_config_has_the_reference_sizes():
    model = load_config(Path(__file__).parents[1] / "configs" / "reference.yaml").model
    assert (model.embed_dim, model.n_heads, model.n_layers, model.ff_dim, model.tanh_clipping) == (128, 8, 6, 512, 10.0)


def test_dotted_overrides_are_parsed_as_yaml():
    config = load_config(None, ["model.n_heads=2", "model.tanh_clipping=5", "model.separate_critic=true", "seed=7"])
    assert config.model.n_heads == 2 and config.seed == 7 and config.model.separate_critic is True
    assert config.model.tanh_clipping == 5.0 and isinstance(config.model.tanh_clipping, float)


def test_unknown_key_is_named_with_the_valid_ones():
    with pytest.raises(ConfigError, match=r"unknown key 'model.n_head'; valid keys: model.embed_dim, model.n_heads"):
        load_config(None, ["model.n_head=4"])


@pytest.mark.parametrize(
    "override, message",
    [
        ("model.n_heads=four", r"'model.n_heads' must be of type int, got 'four'"),
        ("model.n_heads=true", r"'model.n_heads' must be of type int, got True"),
        ("model.separate_critic=1", r"'model.separate_critic' must be of type bool"),
        ("model.attention_impl=flash", r"'model.attention_impl' must be one of \['reference', 'sdpa', 'sparse'\]"),
        ("model=3", r"'model' is a section"),
        ("model.n_heads=3", r"model.n_heads=3 must divide model.embed_dim=128; allowed head counts: \[1, 2, 4, 8"),
        ("model.n_layers=0", r"model.n_layers must be >= 1"),
        ("n_heads", r"must look like key=value"),
    ],
)
def test_bad_values_are_errors_that_name_the_key(override, message):
    with pytest.raises(ConfigError, match=message):
        load_config(None, [override])


def test_unknown_key_in_a_file_is_an_error(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("model:\n  embed_dim: 64\n  heads: 4\n")
    with pytest.raises(ConfigError, match="unknown key 'model.heads'"):
        load_config(path)


def test_saved_config_loads_back_identical(tmp_path):
    config = load_config(None, ["model.n_heads=2", "model.attention_impl=reference"])
    save_config(config, tmp_path / "config.yaml")
    assert load_config(tmp_path / "config.yaml") == config


def test_defaults_are_the_reference_sizes():
    assert ModelConfig() == ModelConfig(embed_dim=128, n_heads=8, n_layers=6, ff_dim=512)
