"""What the map predictor guesses: the robot's belief, the guess, and the truth, side by side."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from env.sensing import FREE, OCCUPIED, UNKNOWN
from viz.heatmaps import plt, save_figure, titled_picture_panel


def belief_shade(belief: np.ndarray) -> np.ndarray:
    """[H, W] grey levels of a belief: free white (1), walls black (0), unknown grey (0.6)."""
    return np.select([belief == FREE, belief == OCCUPIED], [1.0, 0.0], 0.6)


def unknown_tinted(truth: np.ndarray, unknown: np.ndarray) -> np.ndarray:
    """[H, W, 3] RGB in [0, 1] of the true map (``truth``: True = a wall; walls black, free white)
    with the cells ``unknown`` to the robot tinted orange."""
    tinted = np.stack([np.where(truth, 0.0, 1.0)] * 3, axis=-1)
    tinted[unknown] = tinted[unknown] * 0.6 + np.array([0.4, 0.25, 0.0]) * 0.4 + 0.2 * (1 - tinted[unknown])
    return tinted


def map_guess_figure(belief: np.ndarray, wall_probability: np.ndarray, truth: np.ndarray, path: Path,
                     robot: tuple[int, int] | None = None) -> None:
    """Three panels of one state of a map ([H, W] each): the belief (unknown grey, free white,
    walls black), the predictor's probability that each unknown cell is a wall (known cells as in
    the belief), and the true map with the cells still unknown tinted; ``robot`` (row, col) marked
    on each. Written to ``path``."""
    if not belief.shape == wall_probability.shape == truth.shape:
        raise ValueError(f"belief {belief.shape}, wall_probability {wall_probability.shape} and truth "
                         f"{truth.shape} must have one shape")
    shade, unknown = belief_shade(belief), belief == UNKNOWN
    guess = np.where(unknown, 1.0 - wall_probability, shade)
    tinted = unknown_tinted(truth, unknown)
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.6))
    panels = [(shade, "what the robot knows"), (guess, "the predictor's guess (darker: a wall)"),
              (tinted, "the true map (orange: still unknown)")]
    for ax, (image, title) in zip(axes, panels):
        ax.imshow(image, cmap="gray", vmin=0.0, vmax=1.0, interpolation="nearest")
        if robot is not None:
            ax.plot(robot[1], robot[0], "o", color="tab:red", markersize=5)
        titled_picture_panel(ax, title)
    save_figure(fig, path)
