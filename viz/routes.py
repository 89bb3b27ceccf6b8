"""Routes side by side: the same map explored by several players, each rendered at its end."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from viz.heatmaps import plt, save_figure, titled_picture_panel


def routes_figure(finals: dict[str, np.ndarray], path: Path) -> None:
    """One panel per player: ``finals`` maps a panel's title (e.g. "greedy: 39 steps, 168.1
    cells") to its last rendered frame ([h, w, 3] uint8, as ``GridExploreEnv.render`` draws it:
    the path blue, the robot red). All frames must have one shape. Written to ``path``."""
    if not finals:
        raise ValueError("no routes to draw")
    shapes = {frame.shape for frame in finals.values()}
    if len(shapes) > 1:
        raise ValueError(f"the frames have shapes {sorted(shapes)}: draw routes on one map")
    height, width = next(iter(shapes))[:2]
    fig, axes = plt.subplots(1, len(finals), figsize=(4.2 * len(finals), 4.2 * height / width + 0.5), squeeze=False)
    for ax, (title, frame) in zip(axes[0], finals.items()):
        ax.imshow(frame, interpolation="nearest")
        titled_picture_panel(ax, title)
    save_figure(fig, path)
