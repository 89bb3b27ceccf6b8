"""A robot loop around ``Explorer``: a small simulator of its own feeds it a belief and a pose.

The simulator shares no code with the project's env: it holds the true map, casts rays of its own
for a 360-degree sensor, keeps a ROS-style belief (-1 unknown, 0 free, 100 occupied) and drives
the robot cell by cell along each waypoint's path, sensing from every cell it crosses. What a
robot's own stack would do instead: publish the belief from its SLAM, follow the path with its
controller.

    python examples/robot_loop.py                      # a map of rooms drawn here, seed 0
    python examples/robot_loop.py --map office.yaml --downsample 4 --start 30 40
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from anywhere in a checkout

from explorer import Explorer


class Simulator:
    """A robot on a true map ([H, W] bool walls) with a line-of-sight sensor of ``sensor_range``
    cells, which with ``sees_sides`` also sees the four sides of each free cell it sees."""

    def __init__(self, walls: np.ndarray, start: tuple[int, int], sensor_range: int, sees_sides: bool = True) -> None:
        self.walls, self.robot, self.sensor_range, self.sees_sides = walls, start, sensor_range, sees_sides
        self.belief = np.full(walls.shape, -1, dtype=np.int8)
        self.travel = 0.0
        radius = sensor_range
        offsets = [(dr, dc) for dr in range(-radius, radius + 1) for dc in range(-radius, radius + 1)
                   if dr * dr + dc * dc <= radius * radius]
        # For each cell in range, the cells a ray from the robot's centre to its centre passes first.
        self.rays = [((dr, dc), _cells_between(dr, dc)) for dr, dc in offsets]
        self.sense()

    def sense(self) -> None:
        """Mark every cell in range whose centre the robot's centre sees past no wall, and (with
        ``sees_sides``) the four sides of each free one: a wall's face, seen across the floor in front of it."""
        height, width = self.walls.shape
        row, col = self.robot
        for (dr, dc), between in self.rays:
            r, c = row + dr, col + dc
            if not (0 <= r < height and 0 <= c < width):
                continue
            if all(0 <= row + br < height and 0 <= col + bc < width and not self.walls[row + br, col + bc]
                   for br, bc in between):
                self.belief[r, c] = 100 if self.walls[r, c] else 0
                if self.sees_sides and not self.walls[r, c]:
                    for sr, sc in ((r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1)):
                        if 0 <= sr < height and 0 <= sc < width:
                            self.belief[sr, sc] = 100 if self.walls[sr, sc] else 0

    def follow(self, path: list[tuple[int, int]]) -> None:
        """Drive along ``path`` (it starts at the robot), sensing at every cell; refuse a step
        into a cell the belief does not know free, or one that is not a neighbour."""
        if tuple(path[0]) != self.robot:
            raise AssertionError(f"path starts at {path[0]}, the robot is at {self.robot}")
        for cell in path[1:]:
            step = (cell[0] - self.robot[0], cell[1] - self.robot[1])
            if max(abs(step[0]), abs(step[1])) != 1:
                raise AssertionError(f"path jumps from {self.robot} to {cell}")
            if self.belief[cell] != 0:
                raise AssertionError(f"path enters {cell}, which the belief holds as {self.belief[cell]}")
            self.travel += math.hypot(*step)
            self.robot = tuple(cell)
            self.sense()

    def coverage(self) -> float:
        """The fraction of the free cells 4-connected to where the robot is that the belief knows."""
        reached = _reachable(self.walls, self.robot)
        return float((self.belief[reached] == 0).sum() / reached.sum())


def explore(explorer: Explorer, simulator: Simulator, max_waypoints: int = 1000) -> int:
    """Run the loop until the explorer is done; the number of waypoints taken."""
    explorer.reset()
    for taken in range(max_waypoints):
        waypoint = explorer.step(simulator.belief, simulator.robot)
        if waypoint.done:
            return taken
        simulator.follow(waypoint.path)
    raise RuntimeError(f"not done after {max_waypoints} waypoints")


def rooms(size: int, seed: int) -> tuple[np.ndarray, tuple[int, int]]:
    """A square map of rooms joined by doors in the walls of a grid, and a start cell in it."""
    rng = np.random.default_rng(seed)
    walls = np.zeros((size, size), dtype=bool)
    walls[[0, -1], :] = walls[:, [0, -1]] = True
    cuts = [size // 3 + int(rng.integers(-3, 4)), 2 * size // 3 + int(rng.integers(-3, 4))]
    for cut in cuts:
        walls[cut, :] = walls[:, cut] = True
    for cut in cuts:
        for low, high in zip([1, *cuts], [*cuts, size - 1]):
            for wall in (walls[cut], walls[:, cut]):
                door = int(rng.integers(low + 1, high - 2))
                wall[door:door + 2] = False
    free = np.argwhere(~walls)
    return walls, tuple(int(v) for v in free[rng.integers(len(free))])


def _cells_between(dr: int, dc: int) -> list[tuple[int, int]]:
    """The cells a segment from (0, 0) to (dr, dc), between the two cells' centres, passes (ends excluded)."""
    steps = 4 * max(abs(dr), abs(dc))
    cells = {(round(dr * t / steps), round(dc * t / steps)) for t in range(1, steps)}
    return sorted(cells - {(0, 0), (dr, dc)})


def _reachable(walls: np.ndarray, start: tuple[int, int]) -> np.ndarray:
    seen = np.zeros_like(walls)
    stack = [start]
    seen[start] = True
    while stack:
        r, c = stack.pop()
        for nr, nc in ((r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1)):
            if 0 <= nr < walls.shape[0] and 0 <= nc < walls.shape[1] and not walls[nr, nc] and not seen[nr, nc]:
                seen[nr, nc] = True
                stack.append((nr, nc))
    return seen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Explore a map with Explorer and a simulator of its own.")
    parser.add_argument("--agent", default="pretrained/default.pt", help="a pretrained file, checkpoint or run folder")
    parser.add_argument("--planner", action="store_true", help="play the planner the agent's file carries")
    parser.add_argument("--map", type=Path, help="a ROS map YAML (default: rooms drawn here)")
    parser.add_argument("--downsample", type=int, default=1, help="pixels per cell for --map")
    parser.add_argument("--start", type=int, nargs=2, metavar=("ROW", "COL"), help="start cell for --map")
    parser.add_argument("--seed", type=int, default=0, help="the drawn map's seed")
    args = parser.parse_args(argv)
    explorer = Explorer.from_pretrained(args.agent, planner=args.planner)
    if args.map is None:
        walls, start = rooms(40, args.seed)
    else:
        from env.ros_map import (
            read_ros_map,  # reading the map file; the simulation is this file's own
        )

        occupancy = read_ros_map(args.map).occupancy
        d = args.downsample
        height, width = occupancy.shape[0] // d, occupancy.shape[1] // d
        walls = (occupancy[: height * d, : width * d] != 0).reshape(height, d, width, d).any(axis=(1, 3))
        if args.start is None:
            parser.error("--map needs --start ROW COL, a free cell")
        start = tuple(args.start)
    simulator = Simulator(walls, start, explorer.sensor_range)
    waypoints = explore(explorer, simulator)
    print(f"{waypoints} waypoints, {simulator.travel:.1f} cells travelled, coverage {simulator.coverage():.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
