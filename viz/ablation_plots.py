"""Ablation plots: learning curves per setting (seeds, mean, 95% CI), and a final metric per setting.

Both take the sweep's results grouped by setting, ``{label: [result dict per seed]}`` (``evaluation.ablation_report.by_setting``).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from evaluation.stats import mean_ci
from viz.heatmaps import plt


def binned(steps: list[int], values: list[float], edges: np.ndarray) -> np.ndarray:
    """Mean of ``values`` in each step bin; an empty bin repeats the last known mean (NaN before any)."""
    out = np.full(len(edges) - 1, np.nan)
    index = np.digitize(steps, edges) - 1
    for b in range(len(out)):
        hit = [v for i, v in zip(index, values) if i == b]
        out[b] = np.mean(hit) if hit else (out[b - 1] if b else np.nan)
    return out


CURVES = {  # curve (``evaluation.ablation_run.CURVES``) -> (axis label, the range its values live in, y fitted from)
    "coverage": ("coverage at episode end", (0.0, 1.0), 0.0),
    "return": ("episodic return", (-np.inf, np.inf), 0.0),
    # The first few updates travel up to ten times as far; fitted to them, the axis would hide
    # the differences the head count is judged on.
    "travel": ("travel per episode (cells)", (0.0, np.inf), 0.25),
}
"""The y axis of a curve is fitted to the seeds' values from that fraction of the training on."""


def learning_curves(groups: dict[str, list[dict]], total_steps: int, path: Path, bins: int = 20) -> None:
    """Coverage, return and travel against env steps, one colour per setting: each seed as a thin line,
    the mean over seeds as a thick one, shaded ± 95% CI from 3 seeds on (with 2, Student's t makes
    the band 12.7 standard deviations wide and the seeds themselves say more), kept inside the
    range the curve's values live in and with the y axis fitted as ``CURVES`` says."""
    edges = np.linspace(0, total_steps, bins + 1)
    centres = (edges[:-1] + edges[1:]) / 2
    fig, axes = plt.subplots(1, len(CURVES), figsize=(5.5 * len(CURVES), 4))
    fitted = {curve: [] for curve, (*_, fit_from) in CURVES.items() if fit_from}  # values a fitted axis shows
    for colour, (label, runs) in zip(plt.cm.viridis(np.linspace(0, 0.9, len(groups))), groups.items()):
        for ax, (curve, (_, (lowest, highest), fit_from)) in zip(axes, CURVES.items()):
            per_seed = np.array([binned(*r["curves"][curve], edges) for r in runs])  # [seeds, bins]
            if fit_from:
                fitted[curve].extend(per_seed[:, centres >= fit_from * total_steps].ravel())
            stats = [mean_ci([v for v in column if v == v]) for column in per_seed.T]
            mean, half = np.array(stats).T
            ax.plot(centres, per_seed.T, color=colour, alpha=0.35, linewidth=0.8)
            ax.plot(centres, mean, color=colour, label=label, linewidth=2)
            if len(runs) >= 3:
                band = np.clip([mean - half, mean + half], lowest, highest)
                ax.fill_between(centres, *band, color=colour, alpha=0.2)
    for ax, (curve, (name, _, fit_from)) in zip(axes, CURVES.items()):
        values = [v for v in fitted.get(curve, []) if v == v]
        if values:
            margin = 0.05 * (max(values) - min(values)) or 1.0
            ax.set_ylim(min(values) - margin, max(values) + margin)
            ax.set_title(f"y axis fitted from {fit_from * total_steps / 1000:.0f}k steps on", fontsize=8)
        ax.set_xlabel("environment steps")
        ax.xaxis.set_major_formatter(lambda steps, _: f"{steps / 1000:g}k" if steps else "0")
        ax.set_ylabel(name)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def final_metric(groups: dict[str, list[dict]], column: str, ylabel: str, path: Path) -> None:
    """``column`` per setting: each seed as a dot, the mean ± 95% CI as an error bar."""
    fig, ax = plt.subplots(figsize=(1.4 * len(groups) + 3, 3.6))
    for x, (label, runs) in enumerate(groups.items()):
        values = [r[column] for r in runs if r[column] == r[column]]
        if not values:
            continue
        ax.scatter([x] * len(values), values, color="grey", s=14, zorder=2)
        mean, half = mean_ci(values)
        ax.errorbar([x], [mean], yerr=[half], fmt="o", color="crimson", capsize=5, zorder=3)
    ax.set_xticks(range(len(groups)), list(groups), rotation=15, fontsize=8)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
