"""Drawing the policy's choices and attention on top of a rendered map frame.

Node positions are (row, col) cells; ``env.rendering.CELL_PX`` pixels per cell.
"""
from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw

from env.rendering import CELL_PX, enlarged, font
from viz.heatmaps import figure_to_rgb, plt


def _centre(rc: np.ndarray, scale: int = 1) -> tuple[float, float]:
    return (rc[1] + 0.5) * CELL_PX * scale, (rc[0] + 0.5) * CELL_PX * scale


def pointer_overlay(frame: np.ndarray, positions: np.ndarray, candidates: np.ndarray, probs: np.ndarray,
                    chosen: int, scale: int = 1) -> np.ndarray:
    """``frame`` enlarged ``scale`` times (``env.rendering.enlarged``) with the pointer's
    distribution over the candidate neighbours drawn on it.

    Each candidate node gets a disc whose area grows with its probability and its percentage as
    text in DejaVu Sans, beside the disc on whichever side keeps it inside the picture; the chosen
    move is outlined in black. ``candidates`` [K] node indices (-1 = none), ``probs`` [K],
    ``chosen`` the slot taken.
    """
    picture = Image.fromarray(enlarged(np.asarray(frame), scale)).convert("RGB")
    draw = ImageDraw.Draw(picture)
    cell = CELL_PX * scale
    label_font = font(max(10, round(0.9 * cell)))
    for slot, (node, p) in enumerate(zip(candidates, probs)):
        if node < 0 or p < 0.005:
            continue
        x, y = _centre(positions[node], scale)
        radius = cell * (0.5 + 1.6 * np.sqrt(p))
        outline = (0, 0, 0) if slot == chosen else (255, 255, 255)
        draw.ellipse([x - radius, y - radius, x + radius, y + radius], fill=(255, 200, 0), outline=outline,
                     width=max(2, scale + 1))
        text = f"{100 * p:.0f}%"
        _, top, right, bottom = draw.textbbox((0, 0), text, font=label_font, anchor="lm")
        tx = x + radius + 2 if x + radius + 2 + right <= picture.width else x - radius - 2 - right
        ty = min(max(y, -top), picture.height - bottom)
        draw.text((tx, ty), text, fill=(0, 0, 0), font=label_font, anchor="lm", stroke_width=max(1, scale // 2),
                  stroke_fill=(255, 255, 255))
    return np.asarray(picture)


def _draw_attention(ax, frame: np.ndarray, positions: np.ndarray, row: np.ndarray, query: int) -> None:
    """``frame`` on ``ax``, faded halfway to white so that the attention stands out, with lines from
    ``query`` to each key, width and opacity ~ its weight in ``row`` [N]."""
    qx, qy = _centre(positions[query])
    ax.imshow((255 - 0.5 * (255 - frame.astype(np.float32))).astype(np.uint8))
    for key in np.flatnonzero(row > 0.01):
        kx, ky = _centre(positions[key])
        ax.plot([qx, kx], [qy, ky], color="crimson", linewidth=0.8 + 7 * row[key], alpha=min(1.0, 0.4 + row[key]))
        ax.scatter([kx], [ky], s=12 + 240 * row[key], color="crimson", alpha=0.85, zorder=3)
    ax.scatter([qx], [qy], s=110, marker="*", color="black", zorder=4)
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
                ax.set_title(f"head {h}", fontsize=12)
        if label:  # the policy names its row, at the left, so long names never run into each other
            row_axes[0].text(-0.03, 0.5, label.replace("/", "/\n"), transform=row_axes[0].transAxes,
                             rotation=90, ha="right", va="center", fontsize=10)
    fig.suptitle(title, fontsize=13)
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
