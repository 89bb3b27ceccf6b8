"""map_dir: a folder (or glob) of maps, one drawn per episode from its seed, or named by map_index."""
import os
import zlib

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from PIL import Image

from config import EnvConfig
from env.grid_explore import GridExploreEnv
from env.map_collection import find_maps, natural_key
from env.settings import MAP_SPLITS
from evaluation.play import map_dir_size
from learning.envs import check_env_config
from tests.map_folders import MAP_ORDER, MAP_SHAPES, room_map, write_maps


def collection_env(tmp_path, **kwargs) -> GridExploreEnv:
    return GridExploreEnv(map_dir=str(write_maps(tmp_path / "maps")), **kwargs)


def test_names_sort_naturally():
    names = ["10.png", "b.png", "2.png", "a10.png", "1.png", "a2.png", "02.png"]
    assert sorted(names, key=natural_key) == ["1.png", "02.png", "2.png", "10.png", "a2.png", "a10.png", "b.png"]


def test_each_episode_map_follows_its_seed_and_every_map_is_drawn(tmp_path):
    env = collection_env(tmp_path)
    assert env.map_collection.names == MAP_ORDER

    def episode(seed):
        obs, info = env.reset(seed=seed)
        return info["map_file"], env.grid_map.start, obs

    drawn = set()
    for seed in range(40):
        (name, start, obs), (again, start_again, obs_again) = episode(seed), episode(seed)
        assert (name, start) == (again, start_again)
        assert all(np.array_equal(obs[key], obs_again[key]) for key in obs)
        assert env.grid_map.occupied[:MAP_SHAPES[name][0], :MAP_SHAPES[name][1]].shape == MAP_SHAPES[name]
        drawn.add(name)
    assert drawn == set(MAP_ORDER)


def test_map_index_plays_the_named_map_padded_with_obstacles_to_one_shape(tmp_path):
    env = collection_env(tmp_path)
    assert (env.height, env.width) == (18, 20)  # the largest height and the largest width
    for index, name in enumerate(MAP_ORDER):
        obs, info = env.reset(seed=0, options={"map_index": index})
        assert info["map_file"] == name and info["map_family"] == "file"
        height, width = MAP_SHAPES[name]
        occupied = env.grid_map.occupied
        assert occupied.shape == (18, 20)
        assert (occupied[:height, :width] == room_map(height, width)).all()
        assert occupied[height:, :].all() and occupied[:, width:].all()  # padding is obstacle
        assert env.observation_space.contains(obs)
    for bad in (4, -1, "1", 1.0, True):
        with pytest.raises(ValueError, match=rf"map_index={bad!r} must be an int in \[0, 4\)"):
            env.reset(seed=0, options={"map_index": bad})


def test_a_glob_takes_only_what_it_matches_named_relative_to_its_leading_folders(tmp_path):
    write_maps(tmp_path / "maps" / "a", {"2.png": (12, 12), "10.png": (12, 16)})
    write_maps(tmp_path / "maps" / "b", {"1.png": (14, 12)})
    (tmp_path / "maps" / "a" / "README.md").write_text("not a map")
    env = GridExploreEnv(map_dir=str(tmp_path / "maps" / "*" / "*.png"))
    assert env.map_collection.names == ["a/2.png", "a/10.png", "b/1.png"]
    assert (env.height, env.width) == (14, 16)
    _, info = env.reset(seed=0, options={"map_index": 2})
    assert info["map_file"] == "b/1.png"


def test_procedural_maps_name_no_file_and_take_no_map_index():
    env = GridExploreEnv(map_size=16)
    assert env.reset(seed=0)[1]["map_file"] is None
    with pytest.raises(ValueError, match="map_index.*needs map_file or map_dir"):
        env.reset(seed=0, options={"map_index": 0})


def test_check_env_passes_with_a_map_dir(tmp_path):
    check_env(gym.make("GridExplore-v0", map_dir=str(write_maps(tmp_path / "maps"))).unwrapped)


def _broken_png(path):
    """A PNG whose header reads but whose pixels do not decode."""
    Image.fromarray(np.full((12, 12), 255, dtype=np.uint8)).save(path)
    path.write_bytes(path.read_bytes()[:-30])


@pytest.mark.parametrize("case, message", [
    ("empty", r"map_dir='.*maps' holds no map file \(allowed suffixes: \.npy, \.png"),
    ("glob", r"map_dir='.*\*\.bmp' holds no map file"),
    ("missing", r"map_dir='.*nowhere' is neither a folder nor a glob pattern"),
    ("only non-maps", r"map_dir='.*maps' holds no map file"),
    ("unreadable header", r"junk\.png: not a readable image"),
    ("too small", r"tiny\.npy: map of shape \(2, 2\).*too small"),
])
def test_bad_collections_are_refused_at_construction_naming_the_file(tmp_path, case, message):
    folder = tmp_path / "maps"
    folder.mkdir()
    spec = str(folder)
    if case == "glob":
        write_maps(folder)
        spec = str(folder / "*.bmp")
    elif case == "missing":
        spec = str(tmp_path / "nowhere")
    elif case == "only non-maps":
        (folder / "LICENSE").write_text("MIT")
    elif case == "unreadable header":
        write_maps(folder)
        (folder / "junk.png").write_bytes(b"not an image at all")
    elif case == "too small":
        np.save(folder / "tiny.npy", np.zeros((2, 2)))
    with pytest.raises(ValueError, match=message):
        GridExploreEnv(map_dir=spec)


def _corrupt_png(path):
    """A PNG of the right length whose pixel data has one byte flipped."""
    Image.fromarray(np.arange(144, dtype=np.uint8).reshape(12, 12)).save(path)
    data = bytearray(path.read_bytes())
    data[-20] ^= 0xFF  # inside the last IDAT chunk (IEND is the final 12 bytes)
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("write", [_broken_png, _corrupt_png])
def test_damaged_files_that_headers_hide_are_named_by_the_check(tmp_path, write):
    folder = write_maps(tmp_path / "maps")
    write(folder / "broken.png")
    env = GridExploreEnv(map_dir=str(folder))  # headers only: cheap for every worker
    with pytest.raises(ValueError, match="broken.png: not a readable image"):
        for _ in env.map_collection.check_each():
            pass
    assert not env.map_collection.checked


def test_a_map_without_free_cells_is_named_when_played(tmp_path):
    folder = write_maps(tmp_path / "maps", {"1.png": (12, 12)})
    Image.fromarray(np.zeros((12, 12), dtype=np.uint8)).save(folder / "walls.png")
    env = GridExploreEnv(map_dir=str(folder))
    assert list(env.map_collection.check_each()) == ["1.png", "walls.png"]  # the pixels are not decoded
    env.reset(seed=0, options={"map_index": 0})
    with pytest.raises(ValueError, match="walls.png: the map has no free cell"):
        env.reset(seed=0, options={"map_index": 1})


def test_files_beside_the_maps_are_skipped_and_counted(tmp_path, capsys):
    folder = write_maps(tmp_path / "maps")
    (folder / "LICENSE").write_text("MIT")
    (folder / "README.md").write_text("# maps")
    maps = GridExploreEnv(map_dir=str(folder)).map_collection
    assert maps.names == MAP_ORDER and maps.skipped == ("LICENSE", "README.md")
    check_env_config(EnvConfig(kwargs={"map_dir": str(folder), "map_split": "all"}))
    assert "4 maps; skipped 2 file(s) that are not maps (LICENSE, README.md)" in capsys.readouterr().err


def test_the_splits_part_the_collection_by_name_alone(tmp_path):
    names = {f"{i}.png": (12, 12) for i in range(60)}
    folder = write_maps(tmp_path / "maps", names)
    split = {part: GridExploreEnv(map_dir=str(folder), map_split=part).map_collection.names
             for part in MAP_SPLITS}
    expected = [name for name in split["all"] if zlib.crc32(name.encode()) % 10 == 0]  # the documented rule
    assert split["validation"] == expected and 0 < len(expected) < 20
    assert sorted(split["train"] + split["validation"], key=natural_key) == split["all"]
    for extra in ("60.png", "61.png", "62.png"):  # more maps: nobody changes sides
        write_maps(folder, {extra: (12, 12)})
    grown = GridExploreEnv(map_dir=str(folder), map_split="validation").map_collection.names
    assert [name for name in grown if name in names] == expected
    assert map_dir_size(EnvConfig(kwargs={"map_dir": str(folder), "map_split": "validation"})) == len(grown)


def test_the_full_check_reads_every_map_once(tmp_path):
    maps = collection_env(tmp_path).map_collection
    assert not maps.checked
    assert list(maps.check_each()) == MAP_ORDER
    assert maps.checked and find_maps(str(tmp_path / "maps"))[1] == MAP_ORDER


@pytest.mark.parametrize("settings, message", [
    ({"map_file": "a.png", "map_dir": "maps"}, "map_file='a.png' and map_dir='maps' are mutually exclusive"),
    ({"map_dir": 3}, "map_dir must be a path"),
    ({"start": "middle"}, "start='middle' is not one of random, marker"),
    ({"start": "marker"}, "start='marker' reads the start from a map file: set map_file or map_dir"),
    ({"map_split": "test", "map_dir": "maps"}, "map_split='test' is not one of all, train, validation"),
    ({"map_split": "train"}, "map_split='train' parts a map_dir collection: set map_dir"),
])
def test_bad_settings_are_named(settings, message):
    with pytest.raises(ValueError, match=message):
        GridExploreEnv(**settings)


def test_a_map_file_written_again_in_place_is_read_again(tmp_path):
    path = tmp_path / "plan.npy"
    occupied = np.ones((12, 12), dtype=bool)
    occupied[1:-1, 1:6] = False
    np.save(path, occupied)
    first = GridExploreEnv(map_file=str(path), node_spacing=3)
    first.reset(seed=0)
    occupied[1:-1, 6:-1] = False  # the same file, now with twice the floor
    np.save(path, occupied)
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))  # a later write, whatever the clock's grain
    second = GridExploreEnv(map_file=str(path), node_spacing=3)
    second.reset(seed=0)
    assert (~second.grid_map.occupied).sum() == (~occupied).sum() != (~first.grid_map.occupied).sum()
