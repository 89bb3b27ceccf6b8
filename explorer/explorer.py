"""A trained agent off the gridworld: an occupancy grid and a pose in, the next waypoint out."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from env.episode import Actor, CycleBreaker
from env.ros_map import MapFrame
from env.sensing import FREE, OCCUPIED, UNKNOWN
from env.settings import MAX_MAP_SIDE, GridExploreConfig
from evaluation.play import load_policy
from explorer.world import RobotWorld, robot_settings
from graph_batch import argmax_actor
from policy import PolicyNet

ROS_UNKNOWN, ROS_FREE, ROS_OCCUPIED = -1, 0, 100
"""The values of a ROS ``nav_msgs/OccupancyGrid``: unknown, free, occupied (0-100 a probability in %)."""
FREE_BELOW = 20
"""A cell whose occupancy is under this (in %) is free: ROS map_saver's free_thresh 0.196 rounded up."""
OCCUPIED_FROM = 65
"""A cell whose occupancy is at least this (in %) is occupied: ROS map_saver's occupied_thresh 0.65.
Values between ``FREE_BELOW`` and ``OCCUPIED_FROM`` are unknown."""


@dataclass(frozen=True)
class Waypoint:
    """Where the robot goes next: a node of the viewpoint graph, one hop away."""

    target: tuple[int, int]
    """(row, col): the viewpoint to go to next (the robot's own cell when ``done``)."""
    path: list[tuple[int, int]]
    """[(row, col), ...] from the robot's cell to ``target``, 8-connected, over known-free cells."""
    done: bool
    """No node sees a frontier and no lookout can be placed: nothing reachable is left to see."""

    def in_metres(self, frame: MapFrame) -> tuple[tuple[float, float], list[tuple[float, float]]]:
        """(target, path) as (x, y) in metres in ``frame`` (a ROS map's: ``env.ros_map``)."""
        return frame.metres(self.target), [frame.metres(cell) for cell in self.path]


class Explorer:
    """A trained agent (or its planner) choosing waypoints from a robot's belief map and pose.

    ``step(belief, robot)`` takes the belief a robot holds, [H, W] int8 with ROS OccupancyGrid
    values (-1 unknown, 0 free, 100 occupied; 1-99 read with ``FREE_BELOW`` and
    ``OCCUPIED_FROM``), rows as in the map's image (row 0 at the top: flip a ROS message's rows,
    ``belief_from_occupancy_grid``), at the agent's scale (``sensor_range`` cells is the range it
    was trained with), and the robot's cell (row, col). It keeps the viewpoint graph and the
    visited flags between calls as the env does, builds the same observation from the belief
    alone (``explorer.world.RobotWorld``), and returns the agent's next ``Waypoint``, under the
    cycle rule every evaluation plays under (``env.episode.CycleBreaker``). Call ``reset()``
    before a new map.

    With ``layout`` (the map's [H, W] bool walls, where a simulator knows them) the graph is the
    env's own, node for node, and so are the moves; without it (a robot's case) the lattice is
    built from the belief at every call (see ``explorer.world``).
    """

    def __init__(self, policy: PolicyNet, settings: dict, actor: Actor | None = None,
                 layout: np.ndarray | None = None) -> None:
        self.policy = policy.eval()
        self.settings = dict(settings)
        self.config = GridExploreConfig.from_kwargs(**robot_settings(settings))
        self.actor = actor or argmax_actor(self.policy)
        self.layout = layout
        self.reset()

    @classmethod
    def from_pretrained(cls, source: str | Path, planner: bool = False, layout: np.ndarray | None = None) -> Explorer:
        """The agent whose weights ``source`` holds (a pretrained file, a checkpoint or a run
        folder: its newest checkpoint), with ``planner`` the planner its file carries
        (``planner.files``). ``ValueError`` when it carries none or this checkout has no planner/."""
        policy, config = load_policy(Path(source))
        actor = None
        if planner:
            try:
                from planner.actor import planner_actor
                from planner.files import planner_for
            except ModuleNotFoundError as missing:
                if missing.name != "planner":
                    raise
                raise ValueError("planner=True: this checkout has no planner layer (planner/)") from None
            carried = planner_for(Path(source))
            if carried is None:
                raise ValueError(f"planner=True: {source} carries no map predictor (python -m planner.files ... "
                                 f"--planner writes one that does)")
            actor = planner_actor(policy, carried)
        return cls(policy, config.env.kwargs, actor, layout)

    @property
    def sensor_range(self) -> int:
        """The sensor's range in cells that the agent was trained with: scale the belief to it."""
        return self.config.sensor_range

    @property
    def node_spacing(self) -> int:
        """Cells between the graph's lattice points: about the length of one waypoint's hop."""
        return self.config.node_spacing

    def reset(self, layout: np.ndarray | None = None) -> None:
        """Start a new map (with ``layout``, that map's walls: see the class docstring)."""
        if layout is not None:
            self.layout = layout
        self.world: RobotWorld | None = None
        self.breaker = CycleBreaker()

    def step(self, belief: np.ndarray, robot: tuple[int, int]) -> Waypoint:
        """The next waypoint from ``belief`` and ``robot`` (see the class docstring). ``ValueError``
        naming what is wrong with either, before anything is kept."""
        cells = self.belief_cells(belief)
        cell = _checked_robot(robot, cells)
        world = self.world
        if world is None:
            layout = None if self.layout is None else _checked_layout(self.layout, cells.shape)
            world = self.world = RobotWorld(self.settings, *cells.shape, layout=layout)
        elif cells.shape != (world.height, world.width):
            raise ValueError(f"belief: shape {cells.shape} after {(world.height, world.width)} in this episode; "
                             f"call reset() before a new map")
        world.observe(cells, cell)
        if world.exhausted:
            return Waypoint(cell, [cell], True)
        obs = world._observation()
        slot = self.breaker.move(obs, world, self.actor(obs, world))
        world.steps += 1
        node = world.robot_node
        target = int(world.robot_neighbors()[slot])
        if slot == 0 or target < 0:
            return Waypoint(cell, [cell], False)
        path = world.route_cells(world.graph.sweep_positions(node, slot))
        return Waypoint(tuple(int(v) for v in world.graph.node_rc[target]), path, False)

    def belief_cells(self, belief: np.ndarray) -> np.ndarray:
        """``belief`` (ROS values) as the env's UNKNOWN / FREE / OCCUPIED codes; ``ValueError``
        naming a bad type, dtype, shape or value."""
        if not isinstance(belief, np.ndarray):
            raise ValueError(f"belief: a numpy array, got {type(belief).__name__}")
        if belief.dtype != np.int8:
            raise ValueError(f"belief: dtype {belief.dtype}; allowed: int8 (ROS OccupancyGrid values "
                             f"-1 unknown, 0-100 occupancy in %)")
        smallest = 3 * self.config.node_spacing
        if belief.ndim != 2 or min(belief.shape) < smallest or max(belief.shape) > MAX_MAP_SIDE:
            raise ValueError(f"belief: shape {belief.shape}; allowed: [H, W] with {smallest} <= H, W <= "
                             f"{MAX_MAP_SIDE} (3 node spacings at least)")
        bad = (belief < ROS_UNKNOWN) | (belief > ROS_OCCUPIED)
        if bad.any():
            row, col = np.argwhere(bad)[0]
            raise ValueError(f"belief: value {int(belief[row, col])} at cell ({row}, {col}) (and {int(bad.sum()) - 1} "
                             f"more); allowed: -1 unknown, 0-100 occupancy in %")
        cells = np.full(belief.shape, UNKNOWN, dtype=np.int8)
        cells[(belief >= 0) & (belief < FREE_BELOW)] = FREE
        cells[belief >= OCCUPIED_FROM] = OCCUPIED
        return cells


def belief_from_occupancy_grid(data, height: int, width: int) -> np.ndarray:
    """A ROS ``nav_msgs/OccupancyGrid``'s ``data`` (row-major from the map's lower-left cell) as
    ``Explorer.step``'s belief: [height, width] int8, row 0 at the top, as in the map's image."""
    grid = np.asarray(data, dtype=np.int8)
    if grid.size != height * width:
        raise ValueError(f"occupancy grid: {grid.size} values for {height} x {width} cells")
    return np.flipud(grid.reshape(height, width)).copy()


def _checked_robot(robot, cells: np.ndarray) -> tuple[int, int]:
    try:
        row, col = (int(value) for value in robot)
        if (row, col) != tuple(robot):
            raise TypeError
    except (TypeError, ValueError):
        raise ValueError(f"robot: (row, col) cell indices, got {robot!r}") from None
    height, width = cells.shape
    if not (0 <= row < height and 0 <= col < width):
        raise ValueError(f"robot: cell ({row}, {col}) is outside the {height} x {width} belief")
    if cells[row, col] == OCCUPIED:
        raise ValueError(f"robot: cell ({row}, {col}) is occupied in the belief; the robot stands on a free cell")
    return row, col


def _checked_layout(layout, shape: tuple[int, int]) -> np.ndarray:
    layout = np.asarray(layout)
    if layout.shape != shape or layout.dtype != bool:
        raise ValueError(f"layout: a bool [H, W] wall map of the belief's shape {shape}, got {layout.dtype} "
                         f"{layout.shape}")
    return layout
