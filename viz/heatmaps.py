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


def titled_picture_panel(ax, title: str, fontsize: float = 10) -> None:
    """A panel holding a picture: ``title`` above it, no ticks."""
    ax.set_title(title, fontsize=fontsize)
    ax.set_xticks([])
    ax.set_yticks([])


def save_figure(fig, path) -> None:
    """Lay ``fig`` out tightly, write it to ``path`` (110 dpi) and close it."""
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def node_ticks(n: int, most: int = 6) -> np.ndarray:
    """At most ``most`` evenly spaced positions in 0..n-1, the first and the last included."""
    return np.unique(np.linspace(0, n - 1, min(n, most)).round().astype(int))


def attention_heatmaps_figure(weights: np.ndarray, node_mask: np.ndarray, title: str = ""):
    """The matplotlib figure of ``attention_heatmaps``: one panel per head (four to a row), one
    colour bar for all, its limits the smallest and largest weight shown."""
    real = np.flatnonzero(node_mask[: weights.shape[-1]])
    shown = weights[:, real][:, :, real]  # [H, n, n]: real queries and keys only
    low, high = float(shown.min()), float(shown.max())
    high = high if high > low else low + 1e-6  # one value everywhere: still a colour bar to read
    H = weights.shape[0]
    columns = min(H, 4)
    rows = -(-H // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(2.9 * columns + 1.1, 3.3 * rows + 0.9), squeeze=False,
                             layout="constrained")
    ticks = node_ticks(len(real))
    for h, ax in enumerate(axes.flat):
        if h >= H:
            ax.axis("off")
            continue
        image = ax.imshow(shown[h], cmap="viridis", vmin=low, vmax=high, interpolation="nearest")
        ax.set_title(f"head {h}", fontsize=12)
        ax.set_xticks(ticks, real[ticks])
        ax.set_yticks(ticks, real[ticks])
        ax.tick_params(labelsize=10)
        if h >= H - columns:
            ax.set_xlabel("key node (attended to)", fontsize=11)
        if h % columns == 0:
            ax.set_ylabel("query node (attending)", fontsize=11)
    bar = fig.colorbar(image, ax=axes.ravel().tolist(), shrink=0.9, aspect=25, pad=0.02)
    bar.set_label(f"attention weight, {low:.2g} to {high:.2g}\n(each row sums to 1)", fontsize=11)
    bar.ax.tick_params(labelsize=10)
    fig.suptitle(title or "attention weights", fontsize=13)
    return fig


def attention_heatmaps(weights: np.ndarray, node_mask: np.ndarray, title: str = "") -> np.ndarray:
    """One heat map per head of ``weights`` [H,N,N] over the real nodes, as an RGB array [h,w,3].

    Rows are query nodes and columns key nodes, as in d2l's ``show_heatmaps``; each row sums to
    1 over the nodes that query may attend to. Axes carry a few node indices in legible type; the
    colour bar spans the weights shown (a node attends to its few neighbours only, so the largest
    weight is often well under 1), its label says the range.
    """
    return figure_to_rgb(attention_heatmaps_figure(weights, node_mask, title))
