"""viz.heatmaps: the attention matrix's colour bar spans the weights shown, its ticks are few and legible."""
import numpy as np
import pytest

from viz.heatmaps import attention_heatmaps, attention_heatmaps_figure, node_ticks, plt


def _weights(H: int, N: int, n_real: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """[H, N, N] rows that sum to 1 over a few neighbours of each real node, zero for padding."""
    rng = np.random.default_rng(seed)
    weights = np.zeros((H, N, N), dtype=np.float32)
    for i in range(n_real):
        keys = np.arange(max(0, i - 2), min(n_real, i + 3))
        weights[:, i, keys] = rng.dirichlet(np.ones(len(keys)), size=H)
    weights[:, n_real:] = 0
    return weights, np.arange(N) < n_real


@pytest.mark.parametrize("H", [1, 4, 8])
def test_the_colour_bar_spans_the_weights_shown_and_says_so(H):
    weights, mask = _weights(H, N=40, n_real=33)
    weights[:, 35, 0] = 0.99  # a padding row's weight: not shown, so not in the range
    fig = attention_heatmaps_figure(weights, mask, "layer 0")
    shown = weights[:, :33, :33]
    images = [image for ax in fig.axes for image in ax.get_images()]
    assert len(images) == H
    for image in images:
        assert image.get_clim() == pytest.approx((shown.min(), shown.max()))
    bars = [image.colorbar for image in images if image.colorbar is not None]
    assert len(bars) == 1  # one for every head: the same limits
    bar = bars[0]
    assert (bar.vmin, bar.vmax) == pytest.approx((0.0, float(shown.max()))) and shown.max() < 0.99
    assert f"0 to {shown.max():.2g}" in bar.ax.get_ylabel()
    plt.close(fig)


def test_ticks_are_few_legible_node_indices_and_the_title_is_kept():
    weights, mask = _weights(4, N=120, n_real=101)
    fig = attention_heatmaps_figure(weights, mask, "encoder layer 2, step 7")
    assert fig.get_suptitle() == "encoder layer 2, step 7"
    panels = [ax for ax in fig.axes if ax.get_images()]
    for ax in panels:
        labels = [tick.get_text() for tick in ax.get_xticklabels()]
        assert 2 <= len(labels) <= 6 and labels[0] == "0" and labels[-1] == "100"
        assert min(tick.get_fontsize() for tick in ax.get_xticklabels() + ax.get_yticklabels()) >= 10
    assert [ax.get_title() for ax in panels] == [f"head {h}" for h in range(4)]
    plt.close(fig)
    assert node_ticks(1).tolist() == [0] and node_ticks(3).tolist() == [0, 1, 2]
    assert node_ticks(101).tolist() == [0, 20, 40, 60, 80, 100]


def test_the_rgb_picture_is_drawn_and_one_weight_everywhere_still_has_a_colour_bar():
    weights, mask = _weights(2, N=6, n_real=6)
    rgb = attention_heatmaps(weights, mask)
    assert rgb.ndim == 3 and rgb.shape[2] == 3 and rgb.dtype == np.uint8
    flat = np.full((1, 3, 3), 1 / 3, dtype=np.float32)
    fig = attention_heatmaps_figure(flat, np.ones(3, dtype=bool))
    low, high = fig.axes[0].get_images()[0].get_clim()
    assert low == pytest.approx(1 / 3) and high > low
    plt.close(fig)
