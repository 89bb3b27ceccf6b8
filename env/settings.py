"""Parameters of the exploration env, as one typed dataclass."""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, fields
from typing import Any

from env.maps import MAP_FAMILIES

MIXED = "mixed"
"""Family name for "draw one of the procedural families per episode"."""
MAX_MAP_SIDE = 1024
"""The largest map side in cells (procedural or loaded): a map's observation and sensor sweeps
grow with its area, and past this they take gigabytes."""
MAX_SENSOR_RANGE = 64
"""The largest sensor radius in cells: the env pads the map by it and precomputes its rays."""
MAP_SPLITS = ("all", "train", "validation")
"""Which part of a ``map_dir`` collection an env plays (``env.map_collection``)."""
START_RULES = ("random", "marker")
"""Where a loaded map's episode starts: a random cell of its largest free area, or its start marker."""


@dataclass(frozen=True)
class GridExploreConfig:
    """Everything that shapes an episode; ``gymnasium.make`` keyword overrides land here."""

    map_family: str = MIXED
    """Procedural family: one of ``rooms``, ``caves``, ``maze``, ``obstacles``, or ``mixed`` (drawn per
    episode). Ignored when ``map_file`` or ``map_dir`` is set."""
    map_size: int = 40
    """Side of the square procedural map, in cells (walls included)."""
    map_file: str | None = None
    """Your own map: an image (dark = obstacle) or a 2-D ``.npy`` (nonzero = obstacle)."""
    map_dir: str | None = None
    """A collection of your maps, one drawn per episode from its seed: a folder (every file in it
    must be a map; hidden files and subfolders are skipped) or a glob pattern (``maps/*.png``).
    Maps are ordered by a natural sort of their names (``2.png`` before ``10.png``);
    ``reset(options={"map_index": i})`` plays map i of that order instead. A map smaller than the
    collection's largest height or width is padded with obstacle cells at the bottom and right, so
    observations keep one shape. Not with ``map_file``."""
    map_split: str = "all"
    """The part of ``map_dir`` played: ``all``, ``train`` or ``validation``, a fixed tenth of the
    maps chosen by their names (``env.map_collection.in_validation``); train on ``train``, choose
    settings on ``validation``."""
    map_downsample: int = 1
    """Shrink a loaded map by this factor; a block is an obstacle if any of its cells is."""
    start: str = "random"
    """Where a loaded map's robot starts: ``random`` (a random cell of the map's largest free
    area) or ``marker`` (the free cell nearest the map's start marker, see
    :func:`env.map_io.load_map`; a map without one starts at random, with a warning)."""
    sensor_range: int = 6
    """Sensor radius in cells; obstacles block its line of sight."""
    utility_range: int | None = None
    """Radius within which a node counts visible frontier cells; None = ``sensor_range - 1`` (at
    least 1), as the reference counts frontiers a little inside the sensor's reach. At most
    ``sensor_range``."""
    node_spacing: int = 4
    """Lattice spacing of the viewpoint graph, in cells (also the room/maze block size)."""
    k: int = 9
    """Neighbour slots per node, self included (slot 0): the action space size. 9 = self + 8
    lattice neighbours; 5 to 8 = self + the 4 axis-aligned ones; slots beyond are padding."""
    n_max: int | None = None
    """Node capacity of the observation; None = the most the lattice can hold on this map and a
    sixteenth more (at least 4) for lookouts (``node_capacity``)."""
    max_steps: int = 256
    """Steps after which the episode is truncated."""
    strict_actions: bool = False
    """Raise ValueError on a masked action instead of penalising it."""
    allow_stay: bool = False
    """Let the robot choose slot 0 (stay put). Off by default, as in the reference, which masks
    it: staying never reveals anything, and a policy can otherwise idle until truncation. Slot 0
    stays valid when the node has no other move, so the action mask is never empty."""

    context_features: bool = False
    """Add four node features read from the belief around each node: the fractions of unknown and
    of free cells within one and two sensor ranges (``env.context``). Off by default, as the
    reference has none; the floor-plan agent uses them."""
    privileged_features: bool = False
    """Add two node features read from the *true* map (``env.context``): the fractions of the near
    and far squares that are unknown yet free there. A diagnostic of what predicting the unseen map
    would be worth, never for an agent to ship: it sees what the robot has not sensed."""

    def __post_init__(self) -> None:
        allowed = (*MAP_FAMILIES, MIXED)
        if self.map_family not in allowed:
            raise ValueError(f"map_family={self.map_family!r} is not one of {', '.join(allowed)}")
        _check_int("node_spacing", self.node_spacing, 2)
        for name, low in (("map_size", 3 * self.node_spacing), ("sensor_range", 1), ("k", 5),
                          ("max_steps", 1), ("map_downsample", 1)):
            _check_int(name, getattr(self, name), low)
        for name, high in (("map_size", MAX_MAP_SIDE), ("sensor_range", MAX_SENSOR_RANGE)):
            if getattr(self, name) > high:
                raise ValueError(f"{name} must be <= {high}, got {getattr(self, name)}")
        for name in ("strict_actions", "allow_stay", "context_features", "privileged_features"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be true or false, got {getattr(self, name)!r}")
        for name in ("map_file", "map_dir"):
            if getattr(self, name) is not None and not isinstance(getattr(self, name), str):
                raise ValueError(f"{name} must be a path (a string), got {getattr(self, name)!r}")
        if self.map_file is not None and self.map_dir is not None:
            raise ValueError(f"map_file={self.map_file!r} and map_dir={self.map_dir!r} are mutually exclusive: "
                             f"set one of them")
        if self.map_split not in MAP_SPLITS:
            raise ValueError(f"map_split={self.map_split!r} is not one of {', '.join(MAP_SPLITS)}")
        if self.map_split != "all" and self.map_dir is None:
            raise ValueError(f"map_split={self.map_split!r} parts a map_dir collection: set map_dir")
        if self.start not in START_RULES:
            raise ValueError(f"start={self.start!r} is not one of {', '.join(START_RULES)}")
        if self.start == "marker" and self.map_file is None and self.map_dir is None:
            raise ValueError("start='marker' reads the start from a map file: set map_file or map_dir "
                             "(procedural maps have no marker)")
        if self.utility_range is not None:
            _check_int("utility_range", self.utility_range, 1)
            if self.utility_range > self.sensor_range:
                raise ValueError(f"utility_range must be <= sensor_range={self.sensor_range}, "
                                 f"got {self.utility_range}")
        if self.n_max is not None:
            _check_int("n_max", self.n_max, 1)

    @classmethod
    def from_kwargs(cls, **kwargs: Any) -> "GridExploreConfig":
        """Build from keyword overrides, naming any unknown key and the allowed ones."""
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(kwargs) - names)
        if unknown:
            raise ValueError(f"unknown GridExplore parameter(s) {unknown}; allowed: {sorted(names)}")
        return cls(**kwargs)

    @property
    def resolved_utility_range(self) -> int:
        return max(1, self.sensor_range - 1) if self.utility_range is None else self.utility_range

    def lattice_capacity(self, height: int, width: int) -> int:
        """The most lattice points a map of this size can hold, whatever the start cell."""
        return math.ceil(height / self.node_spacing) * math.ceil(width / self.node_spacing)

    def node_capacity(self, height: int, width: int) -> int:
        """The default ``n_max``: the lattice's capacity and room for lookouts, the nodes the
        graph adds where its lattice nodes cannot see into a pocket (``ViewpointGraph.add_lookout``):
        a sixteenth more, at least 4."""
        lattice = self.lattice_capacity(height, width)
        return lattice + max(4, lattice // 16)


def _check_int(name: str, value: Any, low: int) -> None:
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < low:
        raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
