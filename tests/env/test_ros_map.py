"""ROS map_server maps: the YAML's keys, the image's pixels read as map_server reads them, a map
to explore (unknown as wall), a folder of them, evaluate.py playing one, and bad YAMLs named."""
from __future__ import annotations

import numpy as np
import pytest
import yaml
from PIL import Image

from env.map_collection import find_maps
from env.map_io import MapError, load_map, map_shape
from env.ros_map import MapFrame, RosMapError, main, read_ros_map, sensor_downsample

SETTINGS = {"image": "map.pgm", "resolution": 0.05, "origin": [-10.0, -5.0, 0.0], "negate": 0,
            "occupied_thresh": 0.65, "free_thresh": 0.196}


def ros_map(folder, pixels: np.ndarray, image: str = "map.pgm", **changes) -> str:
    """A map_server map in ``folder``: ``pixels`` as its image, the YAML with ``changes``."""
    Image.fromarray(pixels).save(folder / image)
    settings = {**SETTINGS, "image": image, **changes}
    path = folder / (image.rsplit(".", 1)[0] + ".yaml")
    path.write_text(yaml.safe_dump({key: value for key, value in settings.items() if value is not None}))
    return path


def room_pixels() -> np.ndarray:
    """map_saver's greys: 254 free, 0 occupied, 205 unknown; a 40 x 60 room walled, unknown outside."""
    pixels = np.full((48, 64), 205, dtype=np.uint8)
    pixels[2:42, 2:62] = 0
    pixels[3:41, 3:61] = 254
    return pixels


def test_map_servers_greys_are_free_occupied_unknown(tmp_path):
    loaded = read_ros_map(ros_map(tmp_path, room_pixels()))
    assert loaded.occupancy[10, 10] == 0 and loaded.occupancy[2, 10] == 100 and loaded.occupancy[0, 0] == -1
    assert loaded.frame == MapFrame(0.05, (-10.0, -5.0, 0.0), 48)


def test_negate_and_raw_modes(tmp_path):
    pixels = np.array([[0, 255, 128]] * 4, dtype=np.uint8)
    assert read_ros_map(ros_map(tmp_path, pixels, negate=1)).occupancy[0].tolist() == [0, 100, -1]
    raw = np.array([[0, 100, 50, 255]] * 4, dtype=np.uint8)
    assert read_ros_map(ros_map(tmp_path, raw, mode="raw")).occupancy[0].tolist() == [0, 100, -1, -1]


def test_a_transparent_pixel_is_unknown(tmp_path):
    pixels = np.zeros((4, 4, 4), dtype=np.uint8)
    pixels[..., :3], pixels[..., 3] = 254, 255
    pixels[0, 0, 3] = 0
    occupancy = read_ros_map(ros_map(tmp_path, pixels, image="map.png")).occupancy
    assert occupancy[0, 0] == -1 and (occupancy.ravel()[1:] == 0).all()


def test_as_a_map_to_explore_unknown_is_wall_and_it_downsamples(tmp_path):
    path = ros_map(tmp_path, room_pixels())
    assert map_shape(path, 2) == (24, 32)
    loaded = load_map(path, 2)
    assert loaded.occupied.shape == (24, 32) and loaded.marker is None
    assert loaded.occupied[0, 0] and loaded.occupied[1, 5] and not loaded.occupied[10, 10]


def test_a_folder_of_ros_maps_counts_each_map_once(tmp_path):
    ros_map(tmp_path, room_pixels(), image="a.png")
    ros_map(tmp_path, room_pixels(), image="b.pgm")
    _paths, names, skipped = find_maps(str(tmp_path))
    assert names == ["a.yaml", "b.yaml"] and skipped == ("b.pgm",)


@pytest.mark.parametrize("change, message", [
    ({"resolution": None}, "missing key 'resolution'"),
    ({"origin": [0, 0]}, r"origin=\[0, 0\]; allowed: \[x, y, yaw\]"),
    ({"negate": 2}, "negate=2; allowed: 0 or 1"),
    ({"free_thresh": 0.7}, "free_thresh=0.7 must be below occupied_thresh=0.65"),
    ({"occupied_thresh": 1.5}, r"occupied_thresh=1.5; allowed: a number in \[0.0, 1.0\]"),
    ({"resolution": "fine"}, "resolution='fine'"),
    ({"mode": "fuzzy"}, "mode='fuzzy'; allowed: trinary, scale, raw"),
    ({"image": "gone.pgm"}, "its image .*gone.pgm' does not exist"),
])
def test_a_bad_yaml_is_named(tmp_path, change, message):
    path = ros_map(tmp_path, room_pixels(), **{key: value for key, value in change.items() if key != "image"})
    if "image" in change:
        settings = yaml.safe_load(path.read_text())
        path.write_text(yaml.safe_dump({**settings, "image": change["image"]}))
    with pytest.raises(MapError, match=message):
        load_map(path)
    with pytest.raises(MapError, match=message):
        map_shape(path) if "image" in change or "missing" in message else load_map(path)


def test_a_yaml_that_is_no_yaml_is_named(tmp_path):
    path = tmp_path / "map.yaml"
    path.write_text("image: [unclosed")
    with pytest.raises(RosMapError, match="not a readable YAML file"):
        read_ros_map(path)
    path.write_text("- a list")
    with pytest.raises(RosMapError, match="a map YAML holds the keys"):
        read_ros_map(path)


def test_evaluate_plays_a_ros_map(tmp_path, capsys):
    import evaluate

    path = ros_map(tmp_path, room_pixels())
    report = tmp_path / "report.json"
    evaluate.main(["--config", "configs/default.yaml", "--env", f"map_file={path}", "--env", "map_downsample=2",
                   "--policy", "greedy", "--episodes", "2", "--workers", "1", "--json", str(report)])
    assert "| greedy | 1.000" in capsys.readouterr().out


def test_the_sensor_scale(tmp_path, capsys):
    assert sensor_downsample(0.05, 8.0, 10) == 16
    assert sensor_downsample(0.05, 0.1, 10) == 1
    assert main([str(ros_map(tmp_path, room_pixels())), "--sensor-metres", "2", "--sensor-range", "10"]) == 0
    out = capsys.readouterr().out
    assert "48 x 64 pixels of 0.05 m" in out and "map_downsample=4: 12 x 16 cells of 0.2 m; 10 cells reach 2 m" in out
