"""Driven with the env's own belief and pose, the ``Explorer`` chooses evaluate.py's moves.

Each test plays whole episodes through ``env.episode.run_episode`` (the loop ``evaluate.py``
plays, its cycle rule included) in an env wrapped so that, before every move, the ``Explorer``
is handed the env's belief (as ROS values) and the robot's cell, and the cell it names is
compared with where the env's move goes: the agent on procedural maps of every family and on
floor plans drawn here, and the planner of ``pretrained/default.pt``. With the map's layout the
Explorer's graph is the env's, so every move must agree; from the belief alone its lattice is
its own, and only its whole-map result is compared (tests/explorer/test_robot_loop.py).
"""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from PIL import Image

from env.episode import run_episode
from env.sensing import FREE, OCCUPIED
from evaluation.play import load_policy
from explorer import Explorer
from graph_batch import argmax_actor
from tests.helpers import ROOT

DEFAULT = ROOT / "pretrained/default.pt"


def ros_belief(world) -> np.ndarray:
    """The env's belief as a robot reports it: -1 unknown, 0 free, 100 occupied."""
    p = world.pad
    cells = world.belief[p:-p, p:-p]
    return np.select([cells == FREE, cells == OCCUPIED], [0, 100], -1).astype(np.int8)


class Shadowed(gym.Wrapper):
    """Before each move, ask ``explorer`` with the env's belief and pose and record whether the
    waypoint it names is the node the move reaches, its path the route the env will take."""

    def __init__(self, env: gym.Env, explorer: Explorer) -> None:
        super().__init__(env)
        self.explorer, self.moves, self.agreed = explorer, 0, 0

    def reset(self, **kwargs):
        self.explorer.reset(layout=None)
        out = self.env.reset(**kwargs)
        self.explorer.layout = self.env.unwrapped.grid_map.occupied
        return out

    def step(self, action):
        world = self.env.unwrapped
        robot = tuple(int(v) for v in world.graph.node_rc[world.robot_node])
        waypoint = self.explorer.step(ros_belief(world), robot)
        target = int(world.robot_neighbors()[action])
        route = world.route_cells(world.graph.sweep_positions(world.robot_node, action)) if action else [robot]
        self.moves += 1
        self.agreed += (not waypoint.done and waypoint.target == tuple(int(v) for v in world.graph.node_rc[target])
                        and waypoint.path == route)
        return self.env.step(action)


def shadow(source, env_kwargs: dict, seeds, actor_of, planner: bool = False) -> tuple[int, int]:
    policy, config = load_policy(source)
    explorer = Explorer.from_pretrained(source, planner=planner)
    moves = agreed = 0
    for seed in seeds:
        env = Shadowed(gym.make(config.env.id, **env_kwargs), explorer)
        result, _ = run_episode(env, actor_of(policy, source), seed=seed)
        assert result.success
        moves, agreed = moves + env.moves, agreed + env.agreed
    return moves, agreed


def agent(policy, source):
    return argmax_actor(policy)


@pytest.mark.parametrize("family", ["rooms", "caves", "maze", "obstacles"])
def test_the_agent_moves_as_in_evaluate_on_procedural_maps(family):
    _, config = load_policy(DEFAULT)
    moves, agreed = shadow(DEFAULT, {**config.env.kwargs, "map_family": family}, range(101, 104), agent)
    assert moves > 60 and agreed == moves


def floor_plan(path, seed: int) -> None:
    """A floor plan as the reference's PNGs are drawn: light floor, dark walls 2 px thick, rooms
    along a corridor, doors in the walls; 4 px to a cell."""
    rng = np.random.default_rng(seed)
    cells = np.ones((36, 52), dtype=bool)
    cells[14:20, 2:-2] = False  # the corridor
    x = 2
    while x < 44:
        width = int(rng.integers(8, 14))
        for top, bottom, door_row in ((2, 13, 13), (21, 34, 20)):
            cells[top:bottom, x:x + width - 1] = False
            door = x + int(rng.integers(1, width - 3))
            cells[door_row, door:door + 2] = False
        x += width
    image = np.where(np.kron(cells, np.ones((4, 4), dtype=bool)), 0, 255).astype(np.uint8)
    Image.fromarray(image).save(path)


def test_the_agent_moves_as_in_evaluate_on_floor_plans(tmp_path):
    source = ROOT / "pretrained/dungeon.pt"
    _, config = load_policy(source)
    kwargs = {key: value for key, value in config.env.kwargs.items() if key not in ("map_dir", "map_split")}
    moves = agreed = 0
    for seed in range(3):
        path = tmp_path / f"plan{seed}.png"
        floor_plan(path, seed)
        m, a = shadow(source, {**kwargs, "map_file": str(path), "map_downsample": 4, "start": "random"}, [seed], agent)
        moves, agreed = moves + m, agreed + a
    assert moves > 30 and agreed == moves


def test_the_planner_moves_as_in_evaluate():
    from planner.actor import planner_actor
    from planner.files import planner_for

    def planner(policy, source):
        return planner_actor(policy, planner_for(source))

    _, config = load_policy(DEFAULT)
    moves, agreed = shadow(DEFAULT, {**config.env.kwargs, "map_size": 24}, [7, 8], planner, planner=True)
    assert moves > 15 and agreed == moves


def test_a_disagreeing_explorer_is_caught():
    """The comparison can fail: an Explorer of another agent (random weights) disagrees."""
    from policy import build_policy

    policy, config = load_policy(DEFAULT)
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    other = Explorer(build_policy(config), config.env.kwargs)
    env = Shadowed(gym.make(config.env.id, **config.env.kwargs), other)
    run_episode(env, argmax_actor(policy), seed=101)
    assert env.agreed < env.moves
