"""Pictures of an episode: one RGB frame per step, and a GIF writer."""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
from PIL import Image, ImageDraw

from env.sensing import FREE, OCCUPIED

CELL_PX = 8
"""Pixels per map cell."""
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


def save_gif(frames: Sequence[np.ndarray], path: str | Path, fps: float = 4.0) -> Path:
    """Write RGB ``frames`` ([H, W, 3] uint8 each) to an animated GIF at ``path``; return it."""
    if not len(frames):
        raise ValueError("save_gif needs at least one frame")
    if fps <= 0:
        raise ValueError(f"fps must be > 0, got {fps}")
    path = Path(path)
    images = [Image.fromarray(np.asarray(frame, dtype=np.uint8)) for frame in frames]
    images[0].save(path, save_all=True, append_images=images[1:], duration=int(1000 / fps), loop=0)
    return path
