"""Pictures of an episode: one RGB frame per step, its GIF frame (enlarged, with a caption band
of the step and the coverage), and a GIF writer."""
from __future__ import annotations

import functools
import importlib.util
import math
from collections.abc import Sequence
from pathlib import Path

import gymnasium as gym
import numpy as np
from PIL import Image, ImageDraw, ImageFont

from env.sensing import FREE, OCCUPIED

CELL_PX = 8
"""Pixels per map cell."""
GIF_LONG_SIDE = 512
"""The least long side, in pixels, of a GIF's map: a smaller frame is enlarged by a whole factor."""
# Unknown cells show the ground truth faded, so you can see what is still to be found.
COLORS = {
    "unknown_free": (232, 232, 236),
    "unknown_wall": (186, 186, 196),
    "free": (255, 255, 255),
    "wall": (40, 40, 48),
    "frontier": (255, 150, 30),
    "edge": (150, 170, 210),
    "path": (40, 90, 220),
    "guidepost": (245, 200, 0),
    "robot": (220, 30, 40),
    "sensor": (220, 30, 40),
    "no_utility": (120, 120, 130),
}


def _utility_color(fraction: float) -> tuple[int, int, int]:
    """Green (little) to magenta (much) for a node with utility; ``fraction`` in (0, 1]."""
    return (int(60 + 190 * fraction), int(190 - 150 * fraction), int(80 + 120 * fraction))


def render_frame(env) -> np.ndarray:
    """[H*CELL_PX, W*CELL_PX, 3] uint8 picture of ``env`` (an unwrapped GridExploreEnv).

    Ground truth faded under the belief, frontier cells in orange, edges in light blue, nodes as
    squares (grey without utility, green to magenta with more; outlined when visited), the path
    travelled in blue, the guidepost (the observation's shortest route to the nearest node with
    utility) in yellow, and the robot as a red disc with its sensor range.
    """
    pad, graph = env.pad, env.graph
    belief = env.belief[pad:-pad, pad:-pad]
    truth = env.grid_map.occupied
    image = np.empty((*belief.shape, 3), dtype=np.uint8)
    image[:] = COLORS["unknown_free"]
    image[truth] = COLORS["unknown_wall"]
    image[belief == FREE] = COLORS["free"]
    image[belief == OCCUPIED] = COLORS["wall"]
    image[env.frontier[pad:-pad, pad:-pad]] = COLORS["frontier"]
    picture = Image.fromarray(image.repeat(CELL_PX, axis=0).repeat(CELL_PX, axis=1))
    draw = ImageDraw.Draw(picture)

    def centre(rc) -> tuple[float, float]:
        return (rc[1] + 0.5) * CELL_PX, (rc[0] + 0.5) * CELL_PX

    positions = graph.positions()
    neighbors = graph.neighbors()
    for node, row in enumerate(neighbors[: graph.n_nodes]):
        for slot, other in enumerate(row[1:], start=1):
            if other > node:  # along its route: straight, or bent through a door
                route = env.route_cells(graph.sweep_positions(node, slot))
                draw.line([centre(rc) for rc in route], fill=COLORS["edge"], width=1)
    if len(env.path) > 1:
        draw.line([centre(rc) for rc in env.path], fill=COLORS["path"], width=2)
    guidepost = [env.robot_node, *env.guidepost()]
    if len(guidepost) > 1:
        draw.line([centre(positions[node]) for node in guidepost], fill=COLORS["guidepost"], width=2)
    top = max(1, int(graph.utility[: graph.n_nodes].max(initial=1)))
    half = CELL_PX * 0.45
    for node, rc in enumerate(positions):
        x, y = centre(rc)
        utility = graph.utility[node]
        fill = _utility_color(utility / top) if utility else COLORS["no_utility"]
        outline = COLORS["path"] if graph.visited[node] else fill
        draw.rectangle([x - half, y - half, x + half, y + half], fill=fill, outline=outline)
    x, y = centre(positions[env.robot_node])
    reach = (env.config.sensor_range + 0.5) * CELL_PX
    draw.ellipse([x - reach, y - reach, x + reach, y + reach], outline=COLORS["sensor"], width=1)
    draw.ellipse([x - CELL_PX * 0.7, y - CELL_PX * 0.7, x + CELL_PX * 0.7, y + CELL_PX * 0.7],
                 fill=COLORS["robot"], outline=(255, 255, 255))
    return np.asarray(picture)


def gif_scale(shape: Sequence[int]) -> int:
    """The whole factor that brings a frame of ``shape`` ([h, w, ...]) to a long side of at least
    ``GIF_LONG_SIDE`` pixels: 2 for a 32 x 32 or 40 x 40 map, 1 for an 80 x 60 floor plan."""
    return max(1, math.ceil(GIF_LONG_SIDE / max(shape[:2])))


def enlarged(frame: np.ndarray, scale: int) -> np.ndarray:
    """``frame`` [h, w, 3] with each pixel a ``scale`` x ``scale`` block: sharp edges, no blur."""
    return frame.repeat(scale, axis=0).repeat(scale, axis=1)


@functools.cache
def font(size: int) -> ImageFont.FreeTypeFont:
    """DejaVu Sans at ``size`` px: matplotlib's default font, read from its own data folder (the
    requirements install it, so a fresh clone has it; matplotlib is not imported); Pillow's
    built-in font where matplotlib is absent."""
    spec = importlib.util.find_spec("matplotlib")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = Path(folder) / "mpl-data" / "fonts" / "ttf" / "DejaVuSans.ttf"
        if path.is_file():
            return ImageFont.truetype(str(path), size)
    return ImageFont.load_default(size)


def status_caption(env) -> str:
    """Where ``env`` (an unwrapped GridExploreEnv) stands in its episode: the steps taken, the share
    of the reachable free cells known (the coverage of ``info``), and the cells travelled."""
    return f"step {env.steps}  ·  coverage {env.coverage:.0%}  ·  travel {env.travel_distance:.0f} cells"


def captioned(picture: np.ndarray, caption: str) -> np.ndarray:
    """``picture`` [h, w, 3] below a white band holding ``caption``, one line of DejaVu Sans sized
    to the width (about 1/26 of it, 12 to 28 px) and made smaller, down to 10 px, until the whole
    line fits; a line too long even then ends in an ellipsis. Nothing is cut at the frame's edge.
    Returns [h + band, w, 3] uint8."""
    width = picture.shape[1]
    margin = max(4, width // 64)
    size = min(28, max(12, width // 26))
    while size > 10 and font(size).getlength(caption) > width - 2 * margin:
        size -= 1
    while len(caption) > 1 and font(size).getlength(caption) > width - 2 * margin:
        caption = caption[:-2] + "…"
    band = int(size * 1.7)
    canvas = Image.new("RGB", (width, picture.shape[0] + band), (255, 255, 255))
    canvas.paste(Image.fromarray(np.asarray(picture, dtype=np.uint8)), (0, band))
    ImageDraw.Draw(canvas).text((margin, band // 2), caption, fill=(0, 0, 0), font=font(size), anchor="lm")
    return np.asarray(canvas)


def gif_frame(env) -> np.ndarray:
    """``render_frame(env)`` enlarged by ``gif_scale`` under a band of ``status_caption(env)``: a
    GIF's frame, legible at the GIF's own size."""
    frame = render_frame(env)
    return captioned(enlarged(frame, gif_scale(frame.shape)), status_caption(env))


class GifFrames(gym.Wrapper):
    """``env`` (rendering ``rgb_array``) whose ``render()`` gives ``gif_frame``s: wrap the env an
    episode is recorded on, and each recorded frame is ready for ``save_gif``."""

    def render(self) -> np.ndarray:
        return gif_frame(self.env.unwrapped)


def save_gif(frames: Sequence[np.ndarray], path: str | Path, fps: float = 4.0) -> Path:
    """Write RGB ``frames`` ([H, W, 3] uint8 each, one width) to an animated GIF at ``path``; return it."""
    if not len(frames):
        raise ValueError("save_gif needs at least one frame")
    if fps <= 0:
        raise ValueError(f"fps must be > 0, got {fps}")
    path = Path(path)
    arrays = [np.asarray(frame, dtype=np.uint8) for frame in frames]
    # One palette for every frame (from a sample of them, no dithering): a palette per frame would
    # repaint the whole frame whenever a colour comes or goes, and make the file several times larger.
    sample = np.concatenate(arrays[:: max(1, len(arrays) // 8)], axis=0)
    palette = Image.fromarray(sample).quantize(256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    images = [Image.fromarray(a).quantize(palette=palette, dither=Image.Dither.NONE) for a in arrays]
    images[0].save(path, save_all=True, append_images=images[1:], duration=int(1000 / fps), loop=0)
    return path
