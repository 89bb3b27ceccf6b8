from itertools import pairwise

import numpy as np
import pytest
from PIL import Image

from env.baselines import nearest_frontier
from env.grid_explore import GridExploreEnv
from env.rendering import (
    CELL_PX,
    COLORS,
    GIF_LONG_SIDE,
    GifFrames,
    captioned,
    font,
    gif_scale,
    save_gif,
    status_caption,
)


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


def _gif_episode(map_size: int, moves: int) -> list[np.ndarray]:
    """The ``gif_frame``s of ``moves`` of nearest frontier's on a rooms map, the reset's first."""
    env = GifFrames(GridExploreEnv(map_family="rooms", map_size=map_size, render_mode="rgb_array"))
    obs, _ = env.reset(seed=0)
    frames = [env.render()]
    for _ in range(moves):
        obs, _, terminated, truncated, _ = env.step(nearest_frontier(obs, env.unwrapped))
        frames.append(env.render())
        if terminated or truncated:
            break
    return frames


@pytest.mark.parametrize("map_size, scale", [(16, 4), (24, 3), (32, 2), (40, 2), (80, 1)])
def test_a_gif_frame_is_the_map_at_least_512_px_a_side_under_its_caption_band(map_size, scale):
    frames = _gif_episode(map_size, moves=1)
    side = map_size * CELL_PX * scale
    assert gif_scale((map_size * CELL_PX, map_size * CELL_PX, 3)) == scale and side >= GIF_LONG_SIDE
    for frame in frames:
        band = frame.shape[0] - side
        assert frame.shape[1] == side and 20 <= band <= 60, frame.shape  # the map whole, below a band
        env_frame = frame[band:]  # the rendered map, each pixel a scale x scale block
        np.testing.assert_array_equal(env_frame[::scale, ::scale].repeat(scale, 0).repeat(scale, 1), env_frame)


def test_each_frames_caption_names_its_step_and_coverage_and_the_band_changes_every_frame():
    env = GridExploreEnv(map_family="rooms", map_size=32, render_mode="rgb_array")
    obs, info = env.reset(seed=0)
    assert status_caption(env) == f"step 0  ·  coverage {info['coverage']:.0%}  ·  travel 0 cells"
    obs, _, _, _, info = env.step(nearest_frontier(obs, env))
    assert status_caption(env).startswith(f"step 1  ·  coverage {info['coverage']:.0%}  ·  travel ")
    frames = _gif_episode(32, moves=8)
    band = frames[0].shape[0] - frames[0].shape[1]
    for before, after in pairwise(frames):
        assert not np.array_equal(before[:band], after[:band])  # the step counter moved on


def test_the_caption_fits_inside_the_frame_however_long():
    picture = np.zeros((64, 512, 3), dtype=np.uint8)
    for caption in ("step 3", "step 250  ·  coverage 100%  ·  travel 1234 cells", "x" * 200):
        framed = captioned(picture, caption)
        band = framed.shape[0] - 64
        np.testing.assert_array_equal(framed[band:], picture)
        ink = np.flatnonzero((framed[:band] < 128).all(axis=-1).any(axis=0))  # columns holding dark text
        assert ink.size and ink.min() >= 4 and ink.max() < 512 - 4  # inside the margins: nothing cut
    assert font(20).path.endswith("DejaVuSans.ttf")  # matplotlib's default, on any clone with the requirements


def test_a_gif_of_gif_frames_keeps_their_size_and_colours_and_stays_small(tmp_path):
    frames = _gif_episode(40, moves=30)
    path = save_gif(frames, tmp_path / "episode.gif")
    with Image.open(path) as gif:
        assert gif.n_frames == len(frames) and gif.size == (frames[0].shape[1], frames[0].shape[0])
        for i in (0, len(frames) - 1):
            gif.seek(i)
            assert np.abs(np.asarray(gif.convert("RGB"), dtype=int) - frames[i]).max() <= 16
    assert path.stat().st_size < 40_000 * len(frames)  # one palette for all: about 15 kB a frame at 640 px
