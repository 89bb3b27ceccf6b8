"""Bad input to the Explorer is a ValueError naming what is wrong, before anything is kept.

Classes of input covered: the belief's type, dtype, shape, size and values (hand-picked, and
drawn by hypothesis over numpy dtypes, shapes and values); the robot's cell (not a pair, not
integers, outside the map, on an occupied cell); a belief whose shape changes within an episode;
a layout of another shape or type; planner=True on a file without a planner. And the ROS
conversions: an OccupancyGrid's rows flipped to image rows, waypoints in metres.
"""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from env.ros_map import MapFrame
from explorer import Explorer, Waypoint, belief_from_occupancy_grid
from tests.helpers import ROOT, agent_without_planner

DEFAULT = ROOT / "pretrained/default.pt"


@pytest.fixture(scope="module")
def explorer() -> Explorer:
    return Explorer.from_pretrained(DEFAULT)


def open_room(size: int = 24) -> np.ndarray:
    belief = np.full((size, size), -1, dtype=np.int8)
    belief[4:-4, 4:-4] = 0
    belief[0, :] = 100
    return belief


@pytest.mark.parametrize("belief, message", [
    ([[0] * 24] * 24, "belief: a numpy array, got list"),
    (np.zeros((24, 24)), "belief: dtype float64; allowed: int8"),
    (np.zeros((24, 24), dtype=np.int16), "belief: dtype int16"),
    (np.zeros((24, 24), dtype=bool), "belief: dtype bool"),
    (np.zeros((24, 24, 1), dtype=np.int8), r"belief: shape \(24, 24, 1\)"),
    (np.zeros((5, 24), dtype=np.int8), r"belief: shape \(5, 24\); allowed: \[H, W\] with 12 <= H, W"),
    (np.zeros((24, 5000), dtype=np.int8), r"belief: shape \(24, 5000\)"),
    (np.full((24, 24), 101, dtype=np.int8), r"belief: value 101 at cell \(0, 0\) \(and 575 more\)"),
    (np.full((24, 24), -2, dtype=np.int8), "belief: value -2"),
])
def test_a_bad_belief_is_named(explorer, belief, message):
    explorer.reset()
    with pytest.raises(ValueError, match=message):
        explorer.step(belief, (10, 10))
    assert explorer.world is None  # nothing kept


@pytest.mark.parametrize("robot, message", [
    ((10,), r"robot: \(row, col\) cell indices, got \(10,\)"),
    ((10.5, 3), r"robot: \(row, col\) cell indices, got \(10.5, 3\)"),
    ("ab", "robot: \\(row, col\\) cell indices, got 'ab'"),
    (None, "robot: \\(row, col\\) cell indices, got None"),
    ((24, 3), r"robot: cell \(24, 3\) is outside the 24 x 24 belief"),
    ((-1, 3), r"robot: cell \(-1, 3\) is outside"),
    ((0, 3), r"robot: cell \(0, 3\) is occupied in the belief"),
])
def test_a_bad_robot_is_named(explorer, robot, message):
    explorer.reset()
    with pytest.raises(ValueError, match=message):
        explorer.step(open_room(), robot)
    assert explorer.world is None


def test_a_belief_of_another_shape_midway_asks_for_reset(explorer):
    explorer.reset()
    explorer.step(open_room(), (10, 10))
    with pytest.raises(ValueError, match=r"belief: shape \(30, 30\) after \(24, 24\) in this episode; call reset"):
        explorer.step(open_room(30), (10, 10))
    explorer.reset()
    assert not explorer.step(open_room(30), (10, 10)).done


def test_a_bad_layout_is_named():
    ex = Explorer.from_pretrained(DEFAULT, layout=np.zeros((10, 10), dtype=bool))
    with pytest.raises(ValueError, match=r"layout: a bool \[H, W\] wall map of the belief's shape \(24, 24\)"):
        ex.step(open_room(), (10, 10))


def test_planner_true_needs_a_planner(tmp_path):
    with pytest.raises(ValueError, match="carries no map predictor"):
        Explorer.from_pretrained(agent_without_planner(tmp_path / "agent.pt"), planner=True)


@settings(max_examples=60, deadline=None)
@given(belief=hnp.arrays(dtype=st.sampled_from([np.int8, np.int16, np.uint8, np.float32, np.bool_]),
                         shape=hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=30)),
       robot=st.one_of(st.tuples(st.integers(-5, 35), st.integers(-5, 35)), st.none(),
                       st.tuples(st.floats(allow_nan=True), st.integers())))
def test_any_input_is_a_waypoint_or_a_named_error(explorer, belief, robot):
    explorer.reset()
    try:
        waypoint = explorer.step(belief, robot)
    except ValueError as error:
        assert str(error).startswith(("belief: ", "robot: ")), error
        return
    assert isinstance(waypoint, Waypoint) and waypoint.path[0] == tuple(robot)
    cells = waypoint.path
    assert all(max(abs(a[0] - b[0]), abs(a[1] - b[1])) == 1 for a, b in itertools.pairwise(cells))
    assert all(0 <= belief[cell] < 20 for cell in cells[1:])  # known free, as the belief says


def test_an_occupancy_grid_message_is_flipped_to_image_rows():
    data = [0, 0, 0, 100, -1, -1]  # row-major from the lower-left cell: bottom row 0 0 0
    belief = belief_from_occupancy_grid(data, height=2, width=3)
    assert belief.dtype == np.int8
    assert belief.tolist() == [[100, -1, -1], [0, 0, 0]]
    with pytest.raises(ValueError, match="6 values for 3 x 3 cells"):
        belief_from_occupancy_grid(data, height=3, width=3)


def test_waypoints_in_metres():
    frame = MapFrame(resolution=0.05, origin=(-10.0, -5.0, 0.0), image_height=100).scaled(4)
    target, path = Waypoint((0, 0), [(1, 0), (0, 0)], False).in_metres(frame)
    assert target == pytest.approx((-10 + 2 * 0.05, -5 + 98 * 0.05))
    assert path[0] == pytest.approx((-9.9, -5 + 94 * 0.05))


def test_a_rotated_frame_turns_cells_about_its_origin():
    frame = MapFrame(resolution=1.0, origin=(1.0, 2.0, math.pi / 2), image_height=10)
    x, y = frame.metres((9, 0))  # the lower-left cell: 0.5 m right and up of the origin, turned by 90 degrees
    assert (x, y) == pytest.approx((1.0 - 0.5, 2.0 + 0.5))
    for cell in ((0, 0), (9, 3), (4, 7)):
        assert frame.cell_at(*frame.metres(cell)) == cell
