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


def _draw_attention(ax, frame: np.ndarray, positions: np.ndarray, row: np.ndarray, query: int) -> None:
    """``frame`` on ``ax`` with lines from ``query`` to each key, width and opacity ~ its weight in ``row`` [N]."""
    qx, qy = _centre(positions[query])
    ax.imshow(frame)
    for key in np.flatnonzero(row > 0.01):
        kx, ky = _centre(positions[key])
        ax.plot([qx, kx], [qy, ky], color="crimson", linewidth=0.5 + 6 * row[key], alpha=min(1.0, 0.3 + row[key]))
        ax.scatter([kx], [ky], s=10 + 200 * row[key], color="crimson", alpha=0.8, zorder=3)
    ax.scatter([qx], [qy], s=60, marker="*", color="black", zorder=4)
    ax.axis("off")


def attention_on_map(frame: np.ndarray, positions: np.ndarray, weights: np.ndarray, query: int,
                     title: str = "") -> np.ndarray:
    """One panel per head: ``frame`` with lines from ``query`` to each key, width and opacity ~ weight.

    ``weights`` [H,N,N] (one layer); rows are queries. Answers "which node is this node attending to?".
    """
    return attention_rows_on_map(frame, positions, {"": weights}, query, title or f"attention of node {query}")


def attention_rows_on_map(frame: np.ndarray, positions: np.ndarray, weights: dict[str, np.ndarray], query: int,
                          title: str) -> np.ndarray:
    """As ``attention_on_map``, one row of head panels per policy: ``weights`` maps a row label to
    that policy's [H,N,N] weights of one layer on the same state (head counts may differ)."""
    columns = max(w.shape[0] for w in weights.values())
    fig, axes = plt.subplots(len(weights), columns, figsize=(3.2 * columns, 3.3 * len(weights)), squeeze=False,
                             layout="constrained")
    for row_axes, (label, layer) in zip(axes, weights.items()):
        for h, ax in enumerate(row_axes):
            if h >= layer.shape[0]:
                ax.axis("off")
                continue
            _draw_attention(ax, frame, positions, layer[h, query], query)
            if not any(above.get_title() for above in axes[:, h]):  # each column named once, at its top panel
                ax.set_title(f"head {h}", fontsize=9)
        if label:  # the policy names its row, at the left, so long names never run into each other
            row_axes[0].text(-0.03, 0.5, label.replace("/", "/\n"), transform=row_axes[0].transAxes,
                             rotation=90, ha="right", va="center", fontsize=8)
    fig.suptitle(title, fontsize=10)
    return figure_to_rgb(fig)


def head_disagreement(weights: np.ndarray, n_real: int) -> float:
    """How differently the heads of one layer attend: the total-variation distance between two
    heads' attention rows (0: the same distribution, 1: disjoint), averaged over every pair of
    heads and every real query node. ``weights`` [H,N,N]; NaN with one head."""
    H = weights.shape[0]
    if H < 2:
        return float("nan")
    rows = weights[:, :n_real]  # [H,n,N]
    distances = [0.5 * np.abs(rows[a] - rows[b]).sum(-1).mean() for a in range(H) for b in range(a + 1, H)]
    return float(np.mean(distances))
