"""start='marker': the robot's start read from the map image, as the reference reads its PNGs."""
import numpy as np
import pytest
from PIL import Image

from env.grid_explore import GridExploreEnv
from env.map_io import load_map, marker_pixels
from env.maps import largest_free_component

WALL, FLOOR, YELLOW = (127, 127, 127, 255), (195, 195, 194, 255), (255, 216, 0, 255)
"""The reference's DungeonMaps colours (RGBA): obstacle, free, start marker."""


def dungeon_png(path, marker_rows=None, marker_cols=None, walls=()):
    """A 40 x 40 RGBA map in the reference's colours: a walled room, the marker where asked."""
    pixels = np.full((40, 40, 4), FLOOR, dtype=np.uint8)
    pixels[[0, -1], :] = pixels[:, [0, -1]] = WALL
    for cell in walls:
        pixels[cell] = WALL
    if marker_rows is not None:
        pixels[marker_rows, marker_cols] = YELLOW
    Image.fromarray(pixels, "RGBA").save(path)
    return str(path)


def start_of(env, seed=0, **options):
    """The start cell of the episode ``reset(seed=seed, options=options)`` begins."""
    env.reset(seed=seed, options=options or None)
    return env.grid_map.start


@pytest.mark.parametrize("downsample, start", [
    (1, (21, 9)),  # the 3x3 marker's centre pixel
    (2, (10, 4)),  # centroid (21.5, 9.5) px / 2 = (10.75, 4.75) cells: the cell holding it
])
def test_the_robot_starts_at_the_marker(tmp_path, downsample, start):
    path = dungeon_png(tmp_path / "1.png", slice(20, 23), slice(8, 11))
    env = GridExploreEnv(map_file=path, map_downsample=downsample, start="marker")
    assert [start_of(env, seed) for seed in range(3)] == [start] * 3  # whatever the seed
    assert not env.grid_map.occupied[20 // downsample, 9 // downsample]  # marker pixels are free space


def test_a_marker_on_an_obstacle_cell_starts_at_the_nearest_free_cell(tmp_path):
    # Marker centroid (20.5, 10.5) px = (5.125, 2.625) cells at downsample 4; the wall pixel
    # (23, 8) makes that cell an obstacle; the nearest free cell centre is (4.5, 2.5).
    path = dungeon_png(tmp_path / "1.png", slice(19, 22), slice(9, 12), walls=[(23, 8)])
    loaded = load_map(path, downsample=4)
    assert loaded.marker == (5.125, 2.625) and loaded.occupied[5, 2]
    env = GridExploreEnv(map_file=path, map_downsample=4, start="marker", node_spacing=2)
    assert start_of(env) == (4, 2)


def test_the_marker_is_read_in_a_collection_and_in_greyscale(tmp_path):
    folder = tmp_path / "maps"
    folder.mkdir()
    dungeon_png(folder / "1.png", slice(30, 33), slice(30, 33))
    grey = np.full((20, 24), 255, dtype=np.uint8)
    grey[[0, -1], :] = grey[:, [0, -1]] = 0
    grey[5, 7] = 208  # grey 208 has luminance 208
    Image.fromarray(grey).save(folder / "2.png")
    env = GridExploreEnv(map_dir=str(folder), start="marker")
    assert [start_of(env, map_index=i) for i in (0, 1)] == [(31, 31), (5, 7)]


@pytest.mark.parametrize("name", ["plain.png", "plain.npy"])
def test_a_map_without_a_marker_starts_at_random_warning_once(tmp_path, name):
    path = tmp_path / name
    if name.endswith(".npy"):
        occupied = np.zeros((40, 40), dtype=bool)
        occupied[[0, -1], :] = occupied[:, [0, -1]] = True
        np.save(path, occupied)
    else:
        dungeon_png(path)
    env = GridExploreEnv(map_file=str(path), start="marker")
    with pytest.warns(UserWarning, match=rf"{name}: start='marker' but the map has no start marker") as record:
        starts = {start_of(env, seed) for seed in range(5)}
    assert len(record) == 1  # once per file and process
    assert len(starts) > 1 and all(largest_free_component(env.grid_map.occupied)[s] for s in starts)


def test_marker_pixels_are_those_of_truncated_luminance_208():
    # Random colours and the reference's, those whose luminance is within 40 of the marker's kept
    # (its yellow, its floor, grey 208), against the luminance in Python's exact integers.
    rng = np.random.default_rng(0)
    colours = np.concatenate([rng.integers(0, 256, (20_000, 3)), [YELLOW[:3], WALL[:3], FLOOR[:3], (208,) * 3]])
    exact = [(2125 * r + 7154 * g + 721 * b) // 10_000 for r, g, b in colours.tolist()]
    near = np.array([abs(lum - 208) <= 40 for lum in exact])
    rgb = colours[near].astype(np.uint8)[None]  # [1, n, 3]
    expected = [exact[i] == 208 for i in np.flatnonzero(near)]
    assert sum(expected) > 50 and {207, 209} <= set(exact)  # hits, and misses just either side
    assert marker_pixels(rgb)[0].tolist() == expected
