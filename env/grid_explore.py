"""The exploration gridworld as a gymnasium env."""
from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import numpy as np

from env.context import context_features, privileged_features
from env.frontiers import frontier_mask
from env.geometry import flat_index, map_cells, reachable_mask
from env.graph import ViewpointGraph
from env.lattice import LatticeGeometry, build_lattice, n_steps_for
from env.map_collection import map_collection
from env.map_io import start_on
from env.maps import MAP_FAMILIES, GridMap, generate
from env.observation import (
    ACTION_MASK,
    CURRENT_INDEX,
    N_NODE_FEATURES,
    NEIGHBORS,
    NODE_FEATURES,
    NODE_MASK,
    node_feature_names,
    observation_space,
)
from env.reward import step_reward
from env.sensing import FREE, OCCUPIED, UNKNOWN, Sensor, reveal
from env.settings import MIXED, GridExploreConfig
from env.state_copy import copy_except
from env.state_digest import feed, new_digest

EXPLORED_COVERAGE = 0.99
"""The fraction of the reachable free cells that must be known for an episode to terminate."""


class GridExploreEnv(gym.Env):
    """Explore an unknown grid map with a range-limited sensor, travelling as little as possible.

    Description:
        A robot starts somewhere in a map it has never seen. Its belief map (unknown / free /
        occupied) is filled in by a 360-degree line-of-sight sensor of ``sensor_range`` cells,
        which senses from every cell the robot's centre crosses. The robot moves on a viewpoint
        graph: a node per lattice point every ``node_spacing`` cells over known free space,
        joined to its lattice neighbours by routes over known-free cells (see :mod:`env.graph`). Maps
        come from seeded generators (rooms, caves, maze, obstacles, or a mix), from your file
        (``map_file``) or from a collection of them (``map_dir``, one map drawn per episode from
        its seed, or ``reset(options={"map_index": i})``); ``info["map_file"]`` names the
        episode's file (None for a procedural map). See :mod:`env.map_collection`.

    Action Space:
        ``Discrete(k)``: a slot of the robot's node; the robot travels the straight edge to
        ``neighbors[current_index, slot]``. Slot 0 is the node itself (stay), masked unless
        ``allow_stay`` or the node has no other edge. A slot whose
        ``action_mask`` is 0 is not executed: the robot stays, the step is penalised and
        ``info["invalid_action"]`` is True; with ``strict_actions=True`` it raises ValueError.

    Observation:
        A dict laid out in :mod:`env.observation`: ``node_features`` [N_max, 5] (position relative
        to the robot / map side, utility / (2 pi utility_range) clipped to 1, visited flag,
        guidepost flag: on the shortest path to the nearest node with utility; with
        ``context_features``, [N_max, 9]: four more, the unknown and free fractions of the belief
        within one and two sensor ranges of the node, :mod:`env.context`; with
        ``privileged_features``, two more after those, read from the true map: a diagnostic),
        ``node_mask`` [N_max], ``neighbors`` [N_max, K], ``current_index``, ``action_mask`` [K].

    Rewards:
        :func:`env.reward.step_reward`: newly known cells (normalised) minus travel (per node
        spacing), plus a bonus on completion, minus a penalty for a masked action.

    Termination:
        ``terminated`` once no node has utility (no frontier is left that any viewpoint of the
        graph can see) and at least ``EXPLORED_COVERAGE`` (0.99) of the free cells 4-connected to
        the start are known: the only ending that counts as a success. Out of utility short of
        that, the graph first adds a *lookout*, a node where a known-free path leads to a view
        of the frontier that no node sees (``ViewpointGraph.add_lookout``); only where none can be
        placed (or ``n_max`` is full) does the episode end ``truncated`` with ``info["stuck"]``
        True; ``truncated`` also after ``max_steps`` steps. ``info`` holds
        ``coverage`` (fraction of the free cells reachable from the start that are known),
        ``travel_distance`` (cells travelled so far), ``stuck``, ``invalid_action``,
        ``new_cells``, ``n_nodes``, ``map_family``.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 4}
    _FIXED_PER_EPISODE = frozenset({"grid_map", "_occupied", "_truth", "_reachable", "_sweeps", "_sensor",
                                    "config", "map_collection", "observation_space", "action_space", "spec"})
    """What no step changes, shared by ``lookahead_copy``'s copies; a copy gets its own of the rest
    (belief, graph, robot, and ``path``, which grows in place)."""

    def __init__(self, render_mode: str | None = None, **kwargs: Any) -> None:
        self.config = cfg = GridExploreConfig.from_kwargs(**kwargs)
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise ValueError(f"render_mode={render_mode!r}; allowed: None, 'rgb_array'")
        self.render_mode = render_mode
        self.map_collection = map_collection(cfg)  # None for procedural maps; headers only for a map_dir
        self.n_features = len(node_feature_names(cfg.context_features, cfg.privileged_features))
        self.action_space = gym.spaces.Discrete(cfg.k)
        self.utility_range = cfg.resolved_utility_range
        self._utility_norm = 2 * math.pi * self.utility_range
        self._size_for(*((cfg.map_size, cfg.map_size) if self.map_collection is None else self.map_collection.shape))

    def _size_for(self, height: int, width: int) -> None:
        """Set what the map's size fixes: node capacity, observation space, padding, sensor."""
        cfg = self.config
        self.height, self.width = height, width
        capacity = cfg.lattice_capacity(height, width)
        if cfg.n_max is not None and cfg.n_max < capacity:
            raise ValueError(f"n_max={cfg.n_max} is smaller than the {capacity} lattice nodes a "
                             f"{height}x{width} map can hold; allowed: None or >= {capacity}")
        self.n_max = cfg.n_max or cfg.node_capacity(height, width)
        self.observation_space = observation_space(self.n_max, cfg.k, self.n_features)
        # Wider than the sensor's reach plus the neighbour it resolves, so sweeps never index out.
        self.pad = cfg.sensor_range + 2
        self.stride = width + 2 * self.pad
        self._sensor = Sensor(cfg.sensor_range, self.stride)

    # ----------------------------------------------------------------------------- episode
    def _set_world(self, grid_map: GridMap, lattice: LatticeGeometry | None = None) -> None:
        """Make ``grid_map`` the true world: its padded cells, its lattice (``lattice``, else
        built from it) and a graph of it holding the lattice's start node only."""
        cfg = self.config
        self.grid_map = grid_map
        self._occupied = np.pad(grid_map.occupied, self.pad, constant_values=True).ravel()
        self._truth = np.where(self._occupied, OCCUPIED, FREE).astype(np.int8)
        if lattice is None:
            lattice = build_lattice(grid_map.occupied, grid_map.start, cfg.node_spacing, n_steps_for(cfg.k), self.pad)
        self.graph = ViewpointGraph(lattice, height=self.height, width=self.width, stride=self.stride,
                                    spacing=cfg.node_spacing, k=cfg.k, n_max=self.n_max,
                                    utility_range=self.utility_range)
        self._sweeps: dict[bytes, np.ndarray] = {}

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        grid_map, self.map_family, self.map_file = self._draw_map((options or {}).get("map_index"))
        self._set_world(grid_map)
        # Outside the map is known wall: it never counts as news or as a frontier's unknown side.
        self.belief = np.full((self.height + 2 * self.pad, self.stride), OCCUPIED, dtype=np.int8)
        self.belief[self.pad : -self.pad, self.pad : -self.pad] = UNKNOWN
        start = self.grid_map.start
        reachable = reachable_mask(self.grid_map.occupied, start)
        self.reachable_free = int(reachable.sum())
        self._reachable = np.pad(reachable, self.pad).ravel()  # what coverage counts
        self.robot_node = 0
        self.graph.visited[0] = True
        self.path = [start]
        self.travel_distance = 0.0
        self.steps = 0
        self.episode_over = False  # set at termination or truncation; step() then needs a reset()
        self.time_limit_ends_episode = True  # False in lookahead copies, which may play on past it
        self.required_coverage = EXPLORED_COVERAGE
        self.stuck = False
        self.known_free = 0
        start_flat = flat_index(np.array([start]), self.pad, self.stride)
        new_cells = self._reveal(self._sensor.observe(self._occupied, start_flat))
        self._refresh()
        return self._observation(), self._info(new_cells, invalid=False)

    def lookahead_copy(self) -> GridExploreEnv:
        """An independent copy to play ahead in, sharing with this env what an episode never changes.

        The map, its lattice, the spaces and the sensor sweeps cached per edge are shared (a sweep
        depends on the static world only, so either env may fill the cache for both); belief,
        graph and robot are copied (``env.state_copy.copy_except``). The copy holds the true map,
        so a planner that uses it knows what the robot does not.
        """
        twin = copy_except(self, self._FIXED_PER_EPISODE)
        twin.time_limit_ends_episode = False  # a lookahead plays to completion (W(s) of a cut-off state),
        twin.episode_over = self.episode_over and self._exhausted  # also from a state the time limit ended
        return twin

    def state_key(self) -> bytes:
        """A digest of all that this episode's moves, rewards and end depend on from here:
        the belief, the robot's node and the graph (``ViewpointGraph.digest``). Not the step
        count, the travel or the path so far, nor which nodes were visited: only the time limit
        and the observation read those. Two states of one episode with equal keys play out alike
        move for move (the map and its sweeps are the episode's own, so keys of two episodes say
        nothing of each other); ``env.greedy_value.GreedyValue`` joins greedy's plans on it."""
        h = new_digest()
        feed(h, self.robot_node)
        feed(h, self.belief)
        self.graph.digest(h)
        return h.digest()

    def _draw_map(self, map_index: int | None) -> tuple[GridMap, str, str | None]:
        """The episode's map, its family and its file's name (None for a procedural map)."""
        cfg, rng, maps = self.config, self.np_random, self.map_collection
        if maps is not None:
            index = maps.pick(rng, map_index)
            return start_on(maps.load(index), cfg.start, rng, str(maps.paths[index])), "file", maps.names[index]
        if map_index is not None:
            raise ValueError(f"options['map_index']={map_index!r} needs map_file or map_dir; procedural maps "
                             f"are drawn from the seed")
        family = cfg.map_family
        if family == MIXED:
            family = MAP_FAMILIES[int(rng.integers(len(MAP_FAMILIES)))]
        return generate(family, cfg.map_size, cfg.map_size, rng, cfg.node_spacing), family, None

    def step(self, action):
        reward, terminated, truncated, new_cells, invalid = self._move(action)
        return self._observation(), reward, terminated, truncated, self._info(new_cells, invalid)

    def play(self, action) -> tuple[float, bool]:
        """``step`` without building the observation and the info: (reward, terminated). For
        play-outs in copies (``env.greedy_value.play_greedy``), whose player reads the graph and
        the robot's node itself; the observation is most of a play-out step's own cost."""
        reward, terminated, *_ = self._move(action)
        return reward, terminated

    def _move(self, action) -> tuple[float, bool, bool, int, bool]:
        """Move the robot through slot ``action``: (reward, terminated, truncated, new cells, invalid)."""
        cfg = self.config
        if self.episode_over:
            raise RuntimeError("the episode has ended (terminated or truncated); call reset() before step()")
        slot = int(action)
        if not 0 <= slot < cfg.k:
            raise ValueError(f"action {action!r} is outside the action space [0, {cfg.k})")
        target = int(self._neighbors[self.robot_node, slot])
        action_mask = self._action_mask()
        invalid = not action_mask[slot]
        new_cells, distance = 0, 0.0
        if invalid and cfg.strict_actions:
            valid = np.flatnonzero(action_mask).tolist()
            raise ValueError(f"action slot {slot} is masked at node {self.robot_node}; valid slots: {valid}")
        if not invalid and slot != 0:
            positions = self.graph.sweep_positions(self.robot_node, slot)
            # The world is static, so what a route sees (either way) is fixed: sensed once per
            # episode, keyed by the route itself (approach nodes reroute hops per episode).
            key = (positions if positions[0] <= positions[-1] else positions[::-1]).tobytes()
            sweep = self._sweeps.get(key)
            if sweep is None:
                sweep = self._sweeps[key] = self._sensor.observe(self._occupied, positions)
            new_cells = self._reveal(sweep)
            distance = self.graph.slot_length(self.robot_node, slot)
            self.robot_node = target
            self.graph.visited[target] = True
            self.path += self.route_cells(positions)[1:]
            self.travel_distance += distance
            if new_cells:
                self._refresh()
        self.steps += 1
        explored = self._explored()
        terminated = self._exhausted and explored
        self.stuck = self._exhausted and not explored
        truncated = not terminated and (self.stuck or self.steps >= cfg.max_steps)
        self.episode_over = terminated or self.stuck or (truncated and self.time_limit_ends_episode)
        reward = step_reward(new_cells, distance, terminated, invalid,
                             sensor_range=cfg.sensor_range, node_spacing=cfg.node_spacing)
        return reward, terminated, truncated, new_cells, invalid

    @property
    def coverage(self) -> float:
        """The fraction of the free cells reachable from the start that are known (NaN in a world
        that counts none, such as a planner's imagined copy)."""
        return self.known_free / self.reachable_free if self.reachable_free else math.nan

    def _explored(self) -> bool:
        return self.known_free >= self.required_coverage * self.reachable_free

    def _reveal(self, observed: np.ndarray) -> int:
        new = reveal(self.belief.ravel(), self._truth, observed)  # ravel: a view, written through
        self.known_free += int(np.count_nonzero(self._reachable[new]))
        return int(new.size)

    def _refresh(self) -> None:
        """Recompute frontier, graph and the belief-dependent parts of the observation."""
        self.frontier = frontier_mask(self.belief)
        graph = self.graph
        graph.update(self.belief.ravel(), self.frontier.ravel())
        if not graph.utility.any() and not self._explored():  # it would end stuck: look in the pockets
            graph.add_lookout(self.belief.ravel(), self.frontier.ravel())
        n = graph.n_nodes
        self._neighbors = graph.neighbors()
        # Node positions as (rel_x, rel_y) scale, shifted by the robot's at each observation.
        self._node_xy = graph.node_rc[:n, ::-1] / np.float32(max(self.height, self.width))
        self._utility_feature = np.minimum(graph.utility[:n] / self._utility_norm, 1.0)
        # The optional columns after the base ones, in the order of ``node_feature_names``.
        node_rc, optional = graph.node_rc[:n] + self.pad, []
        if self.config.context_features:
            optional.append(context_features(self.belief, node_rc, self.config.sensor_range))
        if self.config.privileged_features:
            optional.append(privileged_features(self.belief, self._reachable.reshape(self.belief.shape), node_rc,
                                                self.config.sensor_range))
        self._optional_features = np.concatenate(optional, axis=1) if optional else None
        self._node_mask = np.zeros(self.n_max, dtype=np.int8)
        self._node_mask[:n] = 1
        self._exhausted = not graph.utility.any()  # no node sees a frontier: nothing left to do
        self._guideposts: dict[int, list[int]] = {}  # per robot node, until the graph next changes

    # ----------------------------------------------------------------------------- outputs
    def _observation(self) -> dict[str, np.ndarray]:
        graph, n = self.graph, self.graph.n_nodes
        features = np.zeros((self.n_max, self.n_features), dtype=np.float32)
        features[:n, :2] = self._node_xy - self._node_xy[self.robot_node]
        features[:n, 2] = self._utility_feature
        features[:n, 3] = graph.visited[:n]
        features[self.guidepost(), 4] = 1.0
        if self._optional_features is not None:
            features[:n, N_NODE_FEATURES:] = self._optional_features
        neighbors = self._neighbors.copy()
        return {
            NODE_FEATURES: features,
            NODE_MASK: self._node_mask.copy(),
            NEIGHBORS: neighbors,
            CURRENT_INDEX: np.int64(self.robot_node),
            ACTION_MASK: self._action_mask(),
        }

    def guidepost(self) -> list[int]:
        """The robot's guidepost (``ViewpointGraph.guidepost`` from its node), kept per node until
        the graph next changes: the observation, the renderer and the baselines share it."""
        path = self._guideposts.get(self.robot_node)
        if path is None:
            path = self._guideposts[self.robot_node] = self.graph.guidepost(self.robot_node)
        return path

    def robot_neighbors(self) -> np.ndarray:
        """[K] the node behind each slot at the robot's node, -1 where there is no edge: the
        observation's ``neighbors[current_index]``, read without building one (a view: do not write)."""
        return self._neighbors[self.robot_node]

    def route_cells(self, positions: np.ndarray) -> list[tuple[int, int]]:
        """(row, col) map cells of flat padded ``positions``, e.g. a hop's
        :meth:`~env.graph.ViewpointGraph.sweep_positions`."""
        return [tuple(cell) for cell in map_cells(positions, self.pad, self.stride).tolist()]

    def _action_mask(self) -> np.ndarray:
        """1 for each slot the robot may take: an existing edge, and slot 0 (stay) only when
        ``allow_stay`` or when the node has no other edge."""
        mask = (self._neighbors[self.robot_node] >= 0).astype(np.int8)
        if not self.config.allow_stay and mask[1:].any():
            mask[0] = 0
        return mask

    def _info(self, new_cells: int, invalid: bool) -> dict[str, Any]:
        return {
            "coverage": self.coverage,
            "travel_distance": self.travel_distance,
            "invalid_action": bool(invalid),
            "new_cells": new_cells,
            "n_nodes": self.graph.n_nodes,
            "map_family": self.map_family,
            "map_file": self.map_file,
            "stuck": self.stuck,
        }

    def render(self):
        if self.render_mode is None:
            gym.logger.warn("render() called without render_mode; pass render_mode='rgb_array'")
            return None
        from env.rendering import render_frame

        return render_frame(self)
