"""The files a user hands the programs, fuzzed: each is read, or refused with the error class its
program turns into one line and exit status 2; none runs code; none ends in another exception.

Classes of input covered (maps have their own: tests/env/test_map_fuzz.py):
  - checkpoint and pretrained files (``run.pretrained.read_weights``, behind ``--checkpoint`` and
    ``--init-from``): a shipped file truncated at any byte, random bytes, an empty file, a pickle
    whose loading would run code, a file that lacks a tensor the network needs;
  - config files and overrides (``config.load_config``, behind ``--config`` and ``key=value``):
    any text, any bytes, any YAML value under any key path, and any override string;
  - evaluation reports (``evaluation.comparison.load_report``, behind ``compare.py`` and
    ``evaluate.py --resume``): any JSON value, any text, a real report with any key removed.
"""
import json

import pytest
import torch
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from config import ConfigError, load_config
from evaluation.comparison import load_report
from evaluation.play import load_policy
from run.checkpoint import CheckpointError
from run.pretrained import read_weights
from tests.helpers import ROOT

FUZZ = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
SHIPPED = (ROOT / "pretrained" / "default.pt").read_bytes()


@FUZZ
@given(keep=st.integers(0, len(SHIPPED) - 1), junk=st.binary(max_size=32))
def test_a_truncated_or_garbled_weights_file_plays_or_is_refused_naming_it(tmp_path, keep, junk):
    """Most cuts break the file; one in the zip's trailing record may leave every tensor whole."""
    path = tmp_path / "weights.pt"
    path.write_bytes(SHIPPED[:keep] + junk)
    try:
        load_policy(path)
    except CheckpointError as error:
        assert "weights.pt" in str(error)


def test_a_pickle_that_would_run_code_runs_none(tmp_path):
    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self):
            return (marker.touch, ())

    path = tmp_path / "evil.pt"
    torch.save({"model": Payload(), "format": "anything"}, path)
    with pytest.raises(CheckpointError, match="evil.pt"):
        read_weights(path)
    assert not marker.exists()
    torch.load(path, weights_only=False)  # the payload is real: an unsafe load runs it
    assert marker.exists()


def test_a_weights_file_missing_a_tensor_is_refused_naming_the_tensor(tmp_path):
    state = torch.load(ROOT / "pretrained" / "default.pt", weights_only=True)
    del state["model"]["value_head.weight"]
    path = tmp_path / "missing.pt"
    torch.save(state, path)
    with pytest.raises(CheckpointError, match=r"missing \['value_head.weight'\]"):
        load_policy(path)


yaml_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                                      max_size=3), max_leaves=6)
sections = st.sampled_from(["seed", "model", "env", "ppo", "run", "model.n_heads", "env.kwargs", "env.kwargs.map_size",
                            "ppo.num_steps", "run.device", "nonsense"])


@FUZZ
@given(key=sections, value=yaml_values)
def test_any_value_under_any_key_loads_or_is_a_config_error(tmp_path, key, value):
    data = value
    for part in reversed(key.split(".")):
        data = {part: data}
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(data))
    try:
        load_config(path)
    except ConfigError:
        pass


@FUZZ
@given(text=st.text(max_size=80) | st.binary(max_size=80).map(lambda b: b.decode("latin-1")))
def test_any_file_text_or_override_loads_or_is_a_config_error(tmp_path, text):
    path = tmp_path / "c.yaml"
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    for load in (lambda: load_config(path), lambda: load_config(None, [text])):
        try:
            load()
        except ConfigError:
            pass


@pytest.fixture(scope="module")
def report():
    """A real report's content, as ``evaluate.py --json`` writes it (two episodes of greedy)."""
    return {"seed": 0, "first_episode": 0, "env": {"id": "GridExplore-v0", "kwargs": {"map_size": 16}},
            "per_episode": {"greedy": [{"success": True, "coverage": 1.0, "steps": 9, "travel_distance": 30.0,
                                        "episodic_return": -3.0, "map_family": "rooms", "map_file": None}] * 2}}


@FUZZ
@given(content=st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=6),
                            lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                                       max_size=3), max_leaves=8),
       raw=st.binary(max_size=40))
def test_any_json_or_bytes_is_a_report_or_refused_naming_the_file(tmp_path, content, raw):
    for name, data in (("a.json", json.dumps(content).encode()), ("b.json", raw)):
        path = tmp_path / name
        path.write_bytes(data)
        try:
            load_report(path)
        except ValueError as error:
            assert str(path) in str(error)


def test_a_report_missing_any_key_is_refused_naming_the_file(tmp_path, report):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(report))
    assert list(load_report(path).episodes) == ["greedy"]
    for key in ("seed", "env", "per_episode"):
        path.write_text(json.dumps({k: v for k, v in report.items() if k != key}))
        with pytest.raises(ValueError, match="r.json: not an evaluate.py --json report"):
            load_report(path)
