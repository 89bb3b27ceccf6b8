"""Typed configuration: YAML files, dotted overrides, and errors that name the key."""
import subprocess
import sys
from pathlib import Path

import pytest

from config import (
    ATTENTION_IMPLS,
    SETTINGS_ADDED_SINCE,
    Config,
    ConfigError,
    ModelConfig,
    flat_settings,
    from_dict,
    load_config,
    load_run_config,
    read_yaml_file,
    save_config,
    saved_config,
)

CONFIG_DIR = Path(__file__).parents[1] / "configs"
CONFIGS = sorted(CONFIG_DIR.glob("*.yaml"))


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
        ("model.attention_impl=flash", r"'model.attention_impl' must be one of \['reference', 'sdpa', 'sparse', 'neighbors', 'auto'\]"),
        ("ppo.update_dtype=float16", r"'ppo.update_dtype' must be one of \['float32', 'bfloat16'\]"),
        ("model=3", r"'model' is a section"),
        ("model.n_heads=3", r"model.n_heads=3 must divide model.embed_dim=64; allowed head counts: \[1, 2, 4, 8, 16"),
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


def test_a_saved_config_with_a_retired_setting_or_value_loads_as_what_does_the_same_today(tmp_path):
    save_config(load_config(None), tmp_path / "config.yaml")
    data = read_yaml_file(tmp_path / "config.yaml")
    data["ppo"]["update_threads"], data["env"]["vector"] = 2, "async"  # as runs saved them before both went
    data["model"]["attention_impl"] = "neighbours"
    config = saved_config(data, "old.pt")
    assert config == load_config(None, ["env.vector=processes", "model.attention_impl=neighbors"])
    assert data["env"]["vector"] == "async"  # the caller's mapping is left as it was
    with pytest.raises(ConfigError, match="unknown key 'ppo.update_threads'"):
        load_config(None, ["ppo.update_threads=2"])  # a config a user writes today is told
    with pytest.raises(ConfigError, match=r"'env.vector' must be one of \['sync', 'processes', 'ray'\], got 'async'"):
        load_config(None, ["env.vector=async"])


def test_a_saved_config_older_than_forward_groups_keeps_a_pass_per_env(tmp_path):
    save_config(load_config(None, ["env.forward_group=2"]), tmp_path / "config.yaml")
    assert load_run_config(tmp_path / "config.yaml").env.forward_group == 2  # a key it has is kept
    data = read_yaml_file(tmp_path / "config.yaml")
    del data["env"]["forward_group"]  # as saved before the key existed
    assert saved_config(data, "old.pt").env.forward_group == SETTINGS_ADDED_SINCE["env.forward_group"] == 1
    assert "forward_group" not in data["env"]  # the caller's mapping is left as it was
    assert load_config(None).env.forward_group == 4  # while today's default is groups of 4
    data["env"]["nonsense"] = 1
    with pytest.raises(ConfigError, match="old.pt: unknown key 'env.nonsense'"):
        saved_config(data, "old.pt")


def test_the_defaults_are_the_default_run_and_its_file_states_only_its_name():
    assert ModelConfig() == ModelConfig(embed_dim=64, n_heads=4, n_layers=6, ff_dim=256)
    assert read_yaml_file(CONFIG_DIR / "default.yaml") == {}  # comments only
    assert load_config(CONFIG_DIR / "default.yaml") == Config() and Config().run.name == "default"


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_a_config_file_states_only_what_differs_from_the_defaults(path):
    defaults = flat_settings(Config())
    stated = flat_settings(from_dict(Config, read_yaml_file(path)))
    written = {f"{section}.{key}" if isinstance(values, dict) else section
               for section, values in read_yaml_file(path).items()
               for key in (values if isinstance(values, dict) else [None])}
    repeated = sorted(key for key in written if key != "env.kwargs" and stated[key] == defaults[key])
    assert not repeated, f"{path.name} repeats defaults: {repeated}"


def test_smoke_runs_the_default_runs_collector_and_bootstrap():
    smoke, default = load_config(CONFIG_DIR / "smoke.yaml"), load_config(CONFIG_DIR / "default.yaml")
    assert (smoke.env.vector, smoke.ppo.gae_values) == (default.env.vector, default.ppo.gae_values) \
        == ("processes", "greedy_rollout")
    assert (smoke.ppo.gamma, smoke.model.attention_impl) == (default.ppo.gamma, default.model.attention_impl)


def test_loading_a_config_imports_no_torch():
    code = "import sys, config; config.load_config('configs/dungeon.yaml'); print('torch' in sys.modules)"
    loaded = subprocess.run([sys.executable, "-c", code], cwd=CONFIG_DIR.parent, capture_output=True, text=True,
                            check=True)
    assert loaded.stdout.strip() == "False"


def test_the_attention_names_are_the_encoders():
    from encoder.attention import ATTENTION
    assert ATTENTION_IMPLS == tuple(ATTENTION)


@pytest.mark.parametrize("override, message", [
    ("ppo.learning_rate=-0.1", r"ppo.learning_rate must be a finite number > 0, got -0.1"),
    ("ppo.learning_rate=.nan", r"ppo.learning_rate must be a finite number > 0, got nan"),
    ("ppo.learning_rate=.inf", r"ppo.learning_rate must be a finite number > 0, got inf"),
    ("ppo.clip_coef=-0.2", r"ppo.clip_coef must be a finite number >= 0, got -0.2"),
    ("ppo.max_grad_norm=-1", r"ppo.max_grad_norm must be a finite number > 0, got -1.0"),
    ("ppo.ent_coef=-0.01", r"ppo.ent_coef must be a finite number >= 0, got -0.01"),
    ("ppo.target_kl=-1", r"ppo.target_kl must be a finite number >= 0, got -1.0"),
    ("run.checkpoint_every=0", r"run.checkpoint_every must be >= 1, got 0"),
    ("run.torch_threads=-2", r"run.torch_threads must be a finite number >= 0, got -2"),
    ("seed=-1", r"seed must be a finite number >= 0, got -1"),
    ("model.tanh_clipping=.nan", r"model.tanh_clipping must be a finite number > 0, got nan"),
    ("model.n_heads=[", r"override 'model.n_heads=\[': the value is not valid YAML"),
    ("env.forward_group=0", r"env.forward_group must be >= 1, got 0"),
])
def test_out_of_range_values_are_refused_naming_the_key(override, message):
    with pytest.raises(ConfigError, match=message):
        load_config(None, [override])


def test_scientific_notation_without_a_dot_is_a_float():
    assert load_config(None, ["ppo.learning_rate=1e-4"]).ppo.learning_rate == 1e-4  # YAML 1.1 reads a string


def test_a_broken_file_is_named_with_the_line(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("model:\n  embed_dim: 64\n  n_heads: [4\n")
    with pytest.raises(ConfigError, match=r"broken.yaml, line \d+: not valid YAML"):
        load_config(path)
    with pytest.raises(ConfigError, match=r"cannot read a config file here \(IsADirectoryError"):
        load_config(tmp_path)
    bad_value = tmp_path / "bad.yaml"
    bad_value.write_text("ppo:\n  clip_coef: -1\n")
    with pytest.raises(ConfigError, match=r"bad.yaml: ppo.clip_coef must be"):
        load_config(bad_value)


def test_ray_workers_take_whole_forward_groups():
    assert load_config(None, ["env.num_envs=10", "env.forward_group=4"]).env.n_forward_groups == 3
    load_config(None, ["env.num_envs=10", "env.forward_group=4", "env.workers=3", "env.vector=ray"])
    with pytest.raises(ConfigError, match=r"env.workers=4 is more than the 3 forward groups of env.num_envs=10 in "
                                          r"groups of env.forward_group=4: .* lower env.workers or env.forward_group"):
        load_config(None, ["env.num_envs=10", "env.forward_group=4", "env.workers=4", "env.vector=ray"])
    with pytest.raises(ConfigError, match=r"env.workers=2 is more than env.num_envs=1: each worker needs"):
        load_config(None, ["env.num_envs=1", "env.vector=ray"])


def test_only_ray_refuses_more_workers_than_groups():
    assert load_config(None).env.vector == "processes" and load_config(None).env.workers == 2
    for vector in ("sync", "processes"):  # processes: one per group at most (tests/learning/test_worker_processes.py)
        assert load_config(None, ["env.num_envs=1", f"env.vector={vector}"]).env.workers == 2
        assert load_config(None, ["env.num_envs=4", f"env.vector={vector}", "env.workers=3"]).env.n_forward_groups == 1
