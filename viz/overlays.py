"""Drawing the policy's choices and attention on top of a rendered map frame.

Node positions are (row, col) cells; ``env.rendering.CELL_PX`` pixels per cell.
"""
from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw

from env.rendering import CELL_PX
from viz.heatmaps import figure_to_rgb, plt


def _centre(rc: np.ndarray) -> tuple[float, float]:
    return (rc[1] + 0.5) * CELL_PX, (rc[0] + 0.5) * CELL_PX


def pointer_overlay(frame: np.ndarray, positions: np.ndarray, candidates: np.ndarray, probs: np.ndarray,
                    chosen: int) -> np.ndarray:
    """``frame`` with the pointer's distribution over the candidate neighbours drawn on it.

    Each candidate node gets a disc whose area grows with its probability and its percentage as
    text; the chosen move is outlined in black. ``candidates`` [K] node indices (-1 = none),
    ``probs`` [K], ``chosen`` the slot taken.
    """
    picture = Image.fromarray(frame).convert("RGB")
    draw = ImageDraw.Draw(picture)
    for slot, (node, p) in enumerate(zip(candidates, probs)):
        if node < 0 or p < 0.005:
            continue
        x, y = _centre(positions[node])
        radius = CELL_PX * (0.5 + 1.6 * np.sqrt(p))
        outline = (0, 0, 0) if slot == chosen else (255, 255, 255)
        draw.ellipse([x - radius, y - radius, x + radius, y + radius], fill=(255, 200, 0), outline=outline, width=2)
        draw.text((x + radius + 1, y - 5), f"{100 * p:.0f}%", fill=(0, 0, 0))
    return np.asarray(picture)


def attention_on_map(frame: np.ndarray, positions: np.ndarray, weights: np.ndarray, query: int,
                     title: str = "") -> np.ndarray:
    """One panel per head: ``frame`` with lines from ``query`` to each key, width and opacity ~ weight.

    ``weights`` [H,N,N] (one layer); rows are queries. Answers "which node is this node attending to?".
    """
    H = weights.shape[0]
    fig, axes = plt.subplots(1, H, figsize=(3.2 * H, 3.4), squeeze=False)
    qx, qy = _centre(positions[query])
    for h, ax in enumerate(axes[0]):
        ax.imshow(frame)
        row = weights[h, query]
        for key in np.flatnonzero(row > 0.01):
            kx, ky = _centre(positions[key])
            ax.plot([qx, kx], [qy, ky], color="crimson", linewidth=0.5 + 6 * row[key], alpha=min(1.0, 0.3 + row[key]))
            ax.scatter([kx], [ky], s=10 + 200 * row[key], color="crimson", alpha=0.8, zorder=3)
        ax.scatter([qx], [qy], s=60, marker="*", color="black", zorder=4)
        ax.set_title(f"head {h}", fontsize=9)
        ax.axis("off")
    fig.suptitle(title or f"attention of node {query}", fontsize=10)
    fig.tight_layout()
    return figure_to_rgb(fig)
