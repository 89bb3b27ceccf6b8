import numpy as np
import pytest
from PIL import Image

from env.baselines import nearest_frontier
from env.grid_explore import GridExploreEnv
from env.rendering import CELL_PX, COLORS, save_gif


def test_rgb_frames_show_the_robot_and_write_a_gif(tmp_path):
    env = GridExploreEnv(map_family="rooms", map_size=24, render_mode="rgb_array")
    obs, _ = env.reset(seed=0)
    frames = [env.render()]
    for _ in range(5):
        obs, *_ = env.step(nearest_frontier(obs, env))
        frames.append(env.render())
    frame = frames[-1]
    assert frame.shape == (24 * CELL_PX, 24 * CELL_PX, 3) and frame.dtype == np.uint8
    row, col = env.path[-1]
    centre = frame[int((row + 0.5) * CELL_PX), int((col + 0.5) * CELL_PX)]
    assert tuple(centre) == COLORS["robot"]
    assert not np.array_equal(frames[0], frames[-1])
    path = save_gif(frames, tmp_path / "episode.gif", fps=5)
    with Image.open(path) as gif:
        assert gif.n_frames == len(frames)


def test_render_without_mode_returns_none():
    env = GridExploreEnv()
    env.reset(seed=0)
    with pytest.warns(UserWarning, match="render_mode"):
        assert env.render() is None


def _has_color(frame: np.ndarray, color) -> bool:
    return bool((frame == np.array(color, dtype=np.uint8)).all(axis=-1).any())


def test_the_guidepost_is_drawn_while_something_is_left_and_not_after():
    env = GridExploreEnv(map_family="rooms", map_size=24, render_mode="rgb_array")
    obs, _ = env.reset(seed=0)
    seen = []
    terminated = False
    while not terminated:
        seen.append((bool(env.graph.guidepost(env.robot_node)), _has_color(env.render(), COLORS["guidepost"])))
        obs, _, terminated, _, _ = env.step(nearest_frontier(obs, env))
    assert all(drawn == exists for exists, drawn in seen) and any(drawn for _, drawn in seen)
    assert not _has_color(env.render(), COLORS["guidepost"])
