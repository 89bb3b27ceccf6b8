"""A robot loop sharing no code with the env: examples/robot_loop.py's simulator feeds the Explorer.

The simulator holds the true map and casts its own rays; the Explorer sees only the belief the
simulator keeps and the robot's cell, from the belief alone (no layout). On maps the env draws
(their walls only), every map is explored whole, every step of every path enters a cell the
belief knew free (``Simulator.follow`` refuses any other), and the travel is the env's agent's
on the same map within a few percent (``python -m experiments.explorer_travel --episodes 100``:
0.997 +- 0.018 of evaluate's travel, map by map).
"""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from env.episode import run_episode
from evaluation.play import load_policy
from examples.robot_loop import Simulator, explore, main, rooms
from explorer import Explorer
from graph_batch import argmax_actor
from tests.helpers import ROOT

DEFAULT = ROOT / "pretrained/default.pt"


def test_the_robot_loop_explores_every_map_whole_near_evaluates_travel():
    policy, config = load_policy(DEFAULT)
    ratios = []
    for seed in range(2000, 2008):
        env = gym.make(config.env.id, **config.env.kwargs)
        result, _ = run_episode(env, argmax_actor(policy), seed=seed)  # evaluate.py's episode on this map
        world = env.unwrapped.grid_map
        simulator = Simulator(world.occupied, world.start, config.env.kwargs.get("sensor_range", 6))
        explore(Explorer(policy, config.env.kwargs), simulator)
        assert simulator.coverage() >= 0.99
        ratios.append(simulator.travel / result.travel_distance)
    assert abs(np.mean(ratios) - 1) < 0.08, ratios


def test_a_sensor_that_sees_no_wall_faces_still_finishes():
    """A robot's sensor other than the env's (no sides seen): the cells it leaves unknown where
    the env's sensor would see them are held as walls, so no viewpoint draws the robot back for good."""
    policy, config = load_policy(DEFAULT)
    env = gym.make(config.env.id, **config.env.kwargs)
    env.reset(seed=2002)  # a map where such a viewpoint held the robot before the rule
    world = env.unwrapped.grid_map

    explorer = Explorer(policy, config.env.kwargs)
    simulator = Simulator(world.occupied, world.start, explorer.sensor_range, sees_sides=False)
    explore(explorer, simulator, max_waypoints=400)
    assert simulator.coverage() >= 0.97
    assert explorer.world.unseeable.size > 0


def test_the_example_runs_as_documented(capsys):
    assert main(["--seed", "3"]) == 0
    line = capsys.readouterr().out
    assert "waypoints" in line and "coverage 1.000" in line


def test_the_drawn_rooms_are_one_free_space():
    from examples.robot_loop import _reachable

    for seed in range(20):
        walls, start = rooms(40, seed)
        assert not walls[start]
        assert _reachable(walls, start).sum() == (~walls).sum()


def test_a_path_into_unknown_space_is_refused():
    walls, start = rooms(40, 0)
    simulator = Simulator(walls, start, 2)
    unknown = tuple(int(v) for v in np.argwhere(simulator.belief == -1)[0])
    with pytest.raises(AssertionError, match="path"):
        simulator.follow([start, unknown])
