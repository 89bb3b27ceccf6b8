"""The agents shipped in pretrained/: small, safe to load, and each plays a map on a fresh clone."""
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from env.episode import run_episode
from evaluation.play import load_policy
from graph_batch import argmax_actor
from learning.envs import make_env, with_env_overrides
from planner.actor import planner_actor
from planner.files import read_planner
from planner.predictor_files import FORMAT as PREDICTOR_FORMAT
from run.pretrained import FORMAT
from tests.helpers import ROOT

SHIPPED = ["default.pt", "dungeon.pt"]
MAX_BYTES = 5_000_000


def floor_plan(path: Path) -> None:
    """A 240 x 320 px plan in the reference's colours (walls grey 127, floor grey 195), two rooms
    joined by a door, with the start marker's yellow (255, 216, 0) in the left room."""
    grey = np.full((240, 320), 127, dtype=np.uint8)
    grey[16:224, 16:152] = 195
    grey[16:224, 168:304] = 195
    grey[100:140, 152:168] = 195  # the door
    rgb = np.stack([grey] * 3, axis=-1)
    rgb[60:68, 60:68] = (255, 216, 0)
    Image.fromarray(rgb).save(path)


def test_both_agents_are_shipped_small_and_load_without_pickled_code():
    for name in SHIPPED:
        path = ROOT / "pretrained" / name
        assert path.stat().st_size < MAX_BYTES, name
        state = torch.load(path, weights_only=True)
        assert state["format"] == FORMAT  # each agent carries its map predictor, for its planner
        assert sorted(state) == ["config", "format", "model", "planner", "trained"]


@pytest.mark.parametrize("name", SHIPPED)
def test_a_shipped_agent_plays_a_map(name, tmp_path):
    policy, config = load_policy(ROOT / "pretrained" / name)
    overrides = []
    if "map_dir" in config.env.kwargs:  # the floor-plan agent: a plan of the reference's kind, made here
        floor_plan(tmp_path / "plan.png")
        overrides = [f"map_dir={tmp_path}", "map_split=all"]
    env = make_env(with_env_overrides(config.env, overrides))
    result, _ = run_episode(env, argmax_actor(policy), seed=1, options={"map_index": 0} if overrides else None)
    assert result.success and result.coverage >= 0.99


def test_the_floor_plan_agent_carries_its_map_predictor_and_plans_a_floor_plan(tmp_path):
    state = torch.load(ROOT / "pretrained" / "dungeon.pt", weights_only=True)["planner"]
    assert state["predictor"]["format"] == PREDICTOR_FORMAT and state["prior_weight"] == 0.25  # v17
    carried = read_planner(ROOT / "pretrained" / "dungeon.pt")
    assert carried.opening == 4  # the floor plans' narrowest passage (docs/results.md section 5, v14)
    policy, config = load_policy(ROOT / "pretrained" / "dungeon.pt")
    floor_plan(tmp_path / "plan.png")
    env = make_env(with_env_overrides(config.env, [f"map_dir={tmp_path}", "map_split=all"]))
    planner = planner_actor(policy, carried)
    result, _ = run_episode(env, planner, seed=1, options={"map_index": 0})
    assert result.success and result.coverage >= 0.99


def test_the_default_agent_carries_its_map_predictor_and_plans_a_procedural_map():
    state = torch.load(ROOT / "pretrained" / "default.pt", weights_only=True)["planner"]
    assert state["predictor"]["format"] == PREDICTOR_FORMAT and state["prior_weight"] == 0.25
    assert "map_dir" not in state["predictor"]["trained"]  # it learned procedural maps (docs/results.md section 5)
    carried = read_planner(ROOT / "pretrained" / "default.pt")
    assert carried.opening is None  # caves and obstacles maps have free cells in no free 2 x 2 square
    policy, config = load_policy(ROOT / "pretrained" / "default.pt")
    env = make_env(config.env)
    result, _ = run_episode(env, planner_actor(policy, carried), seed=1)
    assert result.success and result.coverage >= 0.99
