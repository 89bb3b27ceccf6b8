"""The env's state rebuilt from what a robot has: its belief map and its pose, nothing else.

``RobotWorld`` is a ``GridExploreEnv`` that never holds a true map: each call of ``observe`` sets
the belief a robot reports and the cell it stands on, and the graph, the node features, the
visited flags and the guidepost follow as in the env, so the policy, the cycle rule and the
planner read it as they read the env. Its lattice (where nodes sit, which routes edges take:
:mod:`env.lattice`) comes from one of two maps:

- **the belief** (``layout=None``, a robot's case): built afresh at every call from the cells
  known free, anchored at the first pose. A node sits at the known-free cell of its box nearest
  the lattice point; the robot's box is given the robot's own cell. Any change of the belief is
  taken as it comes: cells revealed anywhere, a free cell turned occupied, the robot off its last
  path. The env's lattice reads the true map (a door's route, a site behind an unseen wall), so
  the moves differ from the env's where the robot has not yet seen what the true map tells.
- **a layout** (``layout=`` the [H, W] bool walls, e.g. a simulator's map): built once from it,
  as the env builds its lattice from its map, the graph grown as the belief grows. Driven with an
  env's own belief and pose, this is the env's state bit for bit (tests/explorer). A belief that
  loses a known cell, changes one, or a robot found off every node starts the graph afresh.

The robot never knows when the map is whole, so it explores until no node sees a frontier and
no lookout can be placed (``ViewpointGraph.add_lookout``): ``exhausted``. What the env counts
from its true map (the free cells to cover, coverage) a robot world does not have.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from env.geometry import sight_table
from env.grid_explore import GridExploreEnv
from env.lattice import build_lattice, cells_before_sites, lattice_point_of, n_steps_for
from env.maps import GridMap
from env.sensing import FREE, OCCUPIED, UNKNOWN

MAP_SOURCE_KEYS = ("map_file", "map_dir", "map_split", "map_downsample", "start", "map_size", "map_family")
"""Env settings about where maps come from: a robot's map comes from the robot."""


def robot_settings(settings: dict) -> dict:
    """The agent's env ``settings`` without ``MAP_SOURCE_KEYS``."""
    return {key: value for key, value in settings.items() if key not in MAP_SOURCE_KEYS}


class RobotWorld(GridExploreEnv):
    """A ``GridExploreEnv`` set from a robot's belief and pose (see the module docstring).

    Args:
        settings: the agent's env kwargs (``config.env.kwargs``): sensor range, node spacing,
            slots, features; any map source in them is ignored.
        height, width: the map's size in cells.
        layout: [H, W] bool walls to build the lattice from, or None to build it from each belief.
    """

    def __init__(self, settings: dict, height: int, width: int, layout: np.ndarray | None = None) -> None:
        super().__init__(**robot_settings(settings))
        if self.config.privileged_features:
            raise ValueError("this agent reads privileged node features (the true map's): no robot has them")
        self._size_for(height, width)
        self.layout = None if layout is None else np.asarray(layout, dtype=bool)
        # The episode so far: none until the first observe, which starts it where the robot stands.
        self.graph = None
        self.anchor: tuple[int, int] | None = None
        self.visited_points: set[int] = set()  # lattice points (belief lattices) the robot stood in
        self.visited_cells: set[tuple[int, int]] = set()  # cells it stood on (a layout's lookouts)
        self.unseeable = np.zeros(0, dtype=np.int64)  # flat cells held as walls: _look_past_what_it_cannot_see
        self.steps = 0
        self.path: list[tuple[int, int]] = []
        self.belief = None
        self.travel_distance = 0.0
        self.episode_over = self.stuck = self.time_limit_ends_episode = False

    @property
    def exhausted(self) -> bool:
        """No node sees a frontier and no lookout could be placed: nothing reachable is left to see."""
        return self._exhausted

    def observe(self, belief: np.ndarray, robot: tuple[int, int]) -> None:
        """Take the robot's ``belief`` ([H, W] int8 of ``env.sensing``'s UNKNOWN / FREE / OCCUPIED)
        and its cell ``robot``; rebuild or grow the graph, so that the robot stands on a node."""
        p = self.pad
        padded = np.full((self.height + 2 * p, self.stride), OCCUPIED, dtype=np.int8)  # outside: known wall
        padded[p:-p, p:-p] = belief
        padded[robot[0] + p, robot[1] + p] = FREE  # the robot stands there
        self._look_past_what_it_cannot_see(padded, robot)
        if self.anchor is None:
            self.anchor = robot
        grows = self.layout is not None and self.graph is not None and _only_gained(self.belief, padded)
        node = self._node_at(robot) if grows else None  # node ids never change as a graph grows
        changed = self.belief is None or not np.array_equal(self.belief, padded)
        self.belief = padded
        if node is not None:
            self.robot_node = node
            if changed:
                self._refresh()
        else:
            self._rebuild(robot)
        self.graph.visited[self.robot_node] = True
        self.visited_points.add(int(self.graph.lattice_of_node[self.robot_node]))
        self.visited_cells.add(robot)
        self.path.append(robot)

    def _look_past_what_it_cannot_see(self, padded: np.ndarray, robot: tuple[int, int]) -> None:
        """Hold as walls the unknown cells that keep a node at ``robot`` a viewpoint: the cells
        within ``utility_range`` whose sight line runs over known-free cells (``env.graph``), and
        the unknown sides of the free ones among them (what makes those frontier cells).

        The env's sensor sees all of these from there (its range is the utility's plus one, and
        it sees the sides of every free cell it sees), which is what makes a viewpoint with
        utility resolve its frontier when the robot stands on it. A robot's sensor may leave such a
        cell unknown (its rays other, a glass pane); its node would keep its utility and draw the
        robot back for good. Kept for the episode,
        wherever the belief still holds the cell unknown; none arise where the belief is the
        env's own."""
        flat = padded.ravel()
        flat[self.unseeable] = np.where(flat[self.unseeable] == UNKNOWN, OCCUPIED, flat[self.unseeable])
        at = (robot[0] + self.pad) * self.stride + robot[1] + self.pad
        cells, between = sight_table(self.utility_range, self.stride)
        in_sight = at + cells[(flat[at + between] == FREE).all(axis=1)]
        free = in_sight[flat[in_sight] == FREE]
        sides = (free[:, None] + self._sensor.around).ravel()  # as the env's sensor sees them
        looked_at = np.concatenate([in_sight, sides])
        missed = np.unique(looked_at[flat[looked_at] == UNKNOWN])
        if missed.size:
            self.unseeable = np.union1d(self.unseeable, missed)
            flat[missed] = OCCUPIED

    def _node_at(self, cell: tuple[int, int]) -> int | None:
        n = self.graph.n_nodes
        found = np.flatnonzero((self.graph.node_rc[:n] == cell).all(axis=1))
        return int(found[0]) if found.size else None

    def _rebuild(self, robot: tuple[int, int]) -> None:
        """A lattice whose robot's box has its node on the robot, and a graph grown from there."""
        p = self.pad
        known = self.belief[p:-p, p:-p]
        walls = (known == OCCUPIED) if self.layout is None else self.layout.copy()
        walls[robot] = False
        lattice = build_lattice(walls, self.anchor, self.config.node_spacing, n_steps_for(self.config.k), p)
        point = lattice_point_of(lattice, robot)
        if tuple(lattice.site_rc[point]) != robot:  # the box's first free cells are before the robot: walls for it
            before = cells_before_sites(lattice.lattice_rc[[point]], np.array([robot]), self.config.node_spacing,
                                        walls.shape)
            walls[before[:, 0], before[:, 1]] = True
            lattice = build_lattice(walls, self.anchor, self.config.node_spacing, n_steps_for(self.config.k), p)
        # The graph grows from the robot's node; _occupied (what a planner's copy may play in) is what it knows.
        self._set_world(GridMap(occupied=known != FREE, start=self.anchor),
                        dataclasses.replace(lattice, start_lattice=point))
        self._reachable = np.zeros_like(self._occupied)
        # Never explored (the robot cannot count the map's free cells): out of utility, a lookout is sought.
        self.reachable_free, self.known_free, self.required_coverage = 1, 0, 1.0
        self.robot_node = 0
        self._refresh()
        n = self.graph.n_nodes
        if self.layout is not None:  # the layout's nodes stay where they were: the cells themselves
            self.graph.visited[:n] = [tuple(rc) in self.visited_cells for rc in self.graph.node_rc[:n].tolist()]
        else:  # a belief lattice's sites move as cells are seen: the lattice points stay
            self.graph.visited[:n] = np.isin(self.graph.lattice_of_node[:n], list(self.visited_points))


def _only_gained(before: np.ndarray | None, after: np.ndarray) -> bool:
    """``after`` keeps every cell ``before`` knew, as it was: the belief only gained cells."""
    if before is None:
        return False
    known = before != UNKNOWN
    return bool(np.array_equal(before[known], after[known]))
