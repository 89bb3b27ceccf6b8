"""ROS ``map_server`` maps: a YAML file naming an image, its resolution and its origin.

A map saved by ``map_saver`` (ROS 1) or ``nav2_map_server`` (ROS 2) is a YAML file::

    image: office.pgm          # relative to the YAML file, or absolute
    resolution: 0.05           # metres per pixel
    origin: [-10.0, -10.0, 0.0]  # x, y (metres) and yaw (radians) of the image's lower-left pixel
    negate: 0                  # 1: white is occupied
    occupied_thresh: 0.65      # occupancy above this is occupied
    free_thresh: 0.196         # occupancy below this is free
    mode: trinary              # optional: trinary (default), scale or raw

A pixel's occupancy is ``(255 - grey) / 255`` (``grey / 255`` with ``negate``), grey the mean of
its colour channels; above ``occupied_thresh`` it is occupied, below ``free_thresh`` free, else
unknown, as is a fully transparent pixel. In ``raw`` mode the grey value is the occupancy in %
itself (over 100: unknown). As a map to explore (``env.map_io.load_map``), unknown cells are walls:
only the known free space is there to be found.

``MapFrame`` turns the cells of such a map (downsampled or not) into metres in its frame and back.
Bring a map to the agent's scale with ``map_downsample``: a cell of ``d`` pixels makes the
agent's sensor reach ``sensor_range * d * resolution`` metres; ``python -m env.ros_map MAP.yaml
--sensor-metres R --sensor-range S`` prints the ``d`` that fits a sensor of ``R`` metres.
"""
from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml
from PIL import Image

REQUIRED_KEYS = ("image", "resolution", "origin", "negate", "occupied_thresh", "free_thresh")
MODES = ("trinary", "scale", "raw")
UNKNOWN, FREE, OCCUPIED = -1, 0, 100
"""The cells' values, as a ROS ``nav_msgs/OccupancyGrid`` holds them."""


class RosMapError(ValueError):
    """A map YAML that cannot be read: the message names the file and what is wrong."""


@dataclass(frozen=True)
class MapFrame:
    """Where a map's cells lie in its frame: cell (row, col) covers pixels ``row * cell ..`` of
    an image ``image_height`` pixels high, row 0 at the top, ``resolution`` metres a pixel, its
    lower-left pixel's corner at ``origin`` (x, y, yaw)."""

    resolution: float
    origin: tuple[float, float, float]
    image_height: int
    cell: int = 1
    """Pixels per cell side: the map's ``map_downsample``."""

    def scaled(self, downsample: int) -> MapFrame:
        """This frame for the map read with ``map_downsample`` = ``downsample``."""
        return MapFrame(self.resolution, self.origin, self.image_height, self.cell * downsample)

    def metres(self, cell: tuple[int, int]) -> tuple[float, float]:
        """(x, y) in metres of the centre of ``cell`` (row, col)."""
        u = (cell[1] + 0.5) * self.cell * self.resolution  # along the image's x, from its left edge
        v = (self.image_height - (cell[0] + 0.5) * self.cell) * self.resolution  # up, from its bottom edge
        x0, y0, yaw = self.origin
        return (x0 + u * math.cos(yaw) - v * math.sin(yaw), y0 + u * math.sin(yaw) + v * math.cos(yaw))

    def cell_at(self, x: float, y: float) -> tuple[int, int]:
        """The (row, col) of the cell holding the point (x, y) in metres."""
        x0, y0, yaw = self.origin
        dx, dy = x - x0, y - y0
        u = dx * math.cos(yaw) + dy * math.sin(yaw)
        v = -dx * math.sin(yaw) + dy * math.cos(yaw)
        size = self.cell * self.resolution
        return math.floor((self.image_height * self.resolution - v) / size), math.floor(u / size)


@dataclass(frozen=True)
class RosMap:
    occupancy: np.ndarray
    """[H, W] int8 in image orientation (row 0 at the top): -1 unknown, 0 free, 100 occupied."""
    frame: MapFrame


def read_ros_map(path: str | Path) -> RosMap:
    """The map the YAML file ``path`` describes; ``RosMapError`` naming the file and the missing
    key, the bad value or the unreadable image."""
    def pixels(image: Image.Image) -> tuple[np.ndarray, np.ndarray | None]:  # grey [H, W], alpha or None
        alpha = np.asarray(image.getchannel("A")) if "A" in image.getbands() else None
        return np.asarray(image.convert("RGB"), dtype=np.float64).mean(axis=2), alpha

    settings, (grey, alpha) = _read_image(Path(path), pixels)
    occupancy = np.full(grey.shape, UNKNOWN, dtype=np.int8)
    if settings["mode"] == "raw":
        occupied = (grey <= 100) & (grey >= 100 * settings["occupied_thresh"])
        free = grey <= 100 * settings["free_thresh"]
    else:
        level = grey / 255 if settings["negate"] else (255 - grey) / 255
        occupied, free = level > settings["occupied_thresh"], level < settings["free_thresh"]
    occupancy[free] = FREE
    occupancy[occupied] = OCCUPIED
    if alpha is not None:
        occupancy[alpha == 0] = UNKNOWN
    origin = tuple(float(value) for value in settings["origin"])
    return RosMap(occupancy, MapFrame(float(settings["resolution"]), origin, grey.shape[0]))


def image_size(path: Path) -> tuple[int, int]:
    """(height, width) in pixels of the image the YAML file ``path`` names, from its header."""
    _, (width, height) = _read_image(path, lambda image: image.size)
    return height, width


def named_image(path: Path) -> Path | None:
    """The image file the map YAML ``path`` names, which is part of that map; None when ``path``
    is no valid map YAML (it is refused as a map, naming why, when it is read)."""
    try:
        return _image_file(path, _settings(path)).resolve()
    except RosMapError:
        return None


def _image_file(path: Path, settings: dict) -> Path:
    """The YAML's ``image``: absolute, or relative to the YAML's folder."""
    image = Path(settings["image"])
    return image if image.is_absolute() else path.parent / image


def _read_image(path: Path, read):
    """(the YAML's checked settings, ``read(image)`` of the image it names, opened);
    ``RosMapError`` naming the YAML and a missing or unreadable image."""
    settings = _settings(path)
    image_path = _image_file(path, settings)
    if not image_path.is_file():
        raise RosMapError(f"{path}: its image {str(image_path)!r} does not exist")
    try:
        with Image.open(image_path) as image:
            return settings, read(image)
    except (OSError, SyntaxError, ValueError, Image.DecompressionBombError) as error:
        raise RosMapError(f"{path}: its image {str(image_path)!r} is not readable ({error})") from None


def _settings(path: Path) -> dict:
    """The YAML's keys, checked: each required one present, of the right type and range."""
    try:
        settings = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise RosMapError(f"map file {str(path)!r} does not exist") from None
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
        raise RosMapError(f"{path}: not a readable YAML file ({error})") from None
    if not isinstance(settings, dict):
        raise RosMapError(f"{path}: a map YAML holds the keys {', '.join(REQUIRED_KEYS)}; got {type(settings).__name__}")
    missing = [key for key in REQUIRED_KEYS if key not in settings]
    if missing:
        raise RosMapError(f"{path}: missing key {missing[0]!r} (a map YAML needs {', '.join(REQUIRED_KEYS)})")
    settings = {"mode": "trinary", **settings}

    def number(key: str, low: float, high: float) -> None:
        value = settings[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
            raise RosMapError(f"{path}: {key}={value!r}; allowed: a number in [{low}, {high}]")

    number("resolution", 1e-9, math.inf)
    number("occupied_thresh", 0.0, 1.0)
    number("free_thresh", 0.0, 1.0)
    if settings["free_thresh"] >= settings["occupied_thresh"]:
        raise RosMapError(f"{path}: free_thresh={settings['free_thresh']} must be below "
                          f"occupied_thresh={settings['occupied_thresh']}")
    origin = settings["origin"]
    if (not isinstance(origin, list) or len(origin) != 3
            or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in origin)):
        raise RosMapError(f"{path}: origin={origin!r}; allowed: [x, y, yaw], three finite numbers")
    if settings["negate"] not in (0, 1) or isinstance(settings["negate"], float):
        raise RosMapError(f"{path}: negate={settings['negate']!r}; allowed: 0 or 1")
    if settings["mode"] not in MODES:
        raise RosMapError(f"{path}: mode={settings['mode']!r}; allowed: {', '.join(MODES)}")
    if not isinstance(settings["image"], str) or not settings["image"]:
        raise RosMapError(f"{path}: image={settings['image']!r}; allowed: the image file's path")
    return settings


def sensor_downsample(resolution: float, sensor_metres: float, sensor_range: int) -> int:
    """The ``map_downsample`` (pixels per cell, >= 1) that makes ``sensor_range`` cells reach
    about ``sensor_metres`` on a map of ``resolution`` metres a pixel."""
    return max(1, round(sensor_metres / (sensor_range * resolution)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Read a ROS map_server map and fit its scale to an agent's sensor.")
    parser.add_argument("map", type=Path, help="the map's YAML file")
    parser.add_argument("--sensor-metres", type=float, help="your robot's sensor range in metres")
    parser.add_argument("--sensor-range", type=int, default=10,
                        help="the agent's sensor range in cells (Explorer.sensor_range; default 10, pretrained/dungeon.pt's)")
    args = parser.parse_args(argv)
    if args.sensor_metres is not None and not args.sensor_metres > 0:
        parser.error(f"--sensor-metres {args.sensor_metres}: a positive distance")
    if args.sensor_range < 1:
        parser.error(f"--sensor-range {args.sensor_range}: 1 cell or more")
    try:
        ros_map = read_ros_map(args.map)
    except RosMapError as error:
        parser.exit(2, f"{parser.prog}: error: {error}\n")
    height, width = ros_map.occupancy.shape
    counts = {name: int((ros_map.occupancy == value).sum()) for name, value in
              (("free", FREE), ("occupied", OCCUPIED), ("unknown", UNKNOWN))}
    print(f"{args.map}: {height} x {width} pixels of {ros_map.frame.resolution} m; "
          + ", ".join(f"{count} {name}" for name, count in counts.items()))
    if args.sensor_metres is not None:
        d = sensor_downsample(ros_map.frame.resolution, args.sensor_metres, args.sensor_range)
        print(f"map_downsample={d}: {height // d} x {width // d} cells of {d * ros_map.frame.resolution:g} m; "
              f"{args.sensor_range} cells reach {args.sensor_range * d * ros_map.frame.resolution:g} m")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
