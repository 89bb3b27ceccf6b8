"""Attention weights as heat maps (matrix form, like d2l's ``show_heatmaps``), drawn with matplotlib."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # headless: training machines have no display
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def figure_to_rgb(fig) -> np.ndarray:
    """Render a matplotlib figure to an RGB array [h,w,3] and close it."""
    fig.canvas.draw()
    rgb = np.asarray(fig.canvas.buffer_rgba())[..., :3].copy()
    plt.close(fig)
    return rgb


def titled_picture_panel(ax, title: str) -> None:
    """A panel holding a picture: ``title`` above it, no ticks."""
    ax.set_title(title, fontsize=10)
    ax.set_xticks([])
    ax.set_yticks([])


def save_figure(fig, path) -> None:
    """Lay ``fig`` out tightly, write it to ``path`` (110 dpi) and close it."""
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def attention_heatmaps(weights: np.ndarray, node_mask: np.ndarray, title: str = "") -> np.ndarray:
    """One heat map per head of ``weights`` [H,N,N] over the real nodes, as an RGB array [h,w,3].

    Rows are query nodes and columns key nodes, as in d2l's ``show_heatmaps``; each row sums to
    1 over the nodes that query may attend to. Axes are labelled with node indices.
    """
    real = np.flatnonzero(node_mask[: weights.shape[-1]])
    H = weights.shape[0]
    fig, axes = plt.subplots(1, H, figsize=(2.6 * H + 0.6, 2.8), squeeze=False)
    for h, ax in enumerate(axes[0]):
        image = ax.imshow(weights[h][np.ix_(real, real)], cmap="viridis", vmin=0.0, vmax=1.0)
        ax.set_title(f"head {h}", fontsize=9)
        ax.set_xlabel("key node", fontsize=8)
        if h == 0:
            ax.set_ylabel("query node", fontsize=8)
        ax.tick_params(labelsize=6)
        ticks = np.arange(0, len(real), max(1, len(real) // 8))
        ax.set_xticks(ticks, real[ticks])
        ax.set_yticks(ticks, real[ticks])
    fig.colorbar(image, ax=axes[0].tolist(), shrink=0.8)
    if title:
        fig.suptitle(title, fontsize=10)
    return figure_to_rgb(fig)
