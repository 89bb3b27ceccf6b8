"""One costly decision: what the robot knew, and the route each candidate move leads to on the true map."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from env.sensing import UNKNOWN
from planner.map_guess_picture import belief_shade, unknown_tinted
from viz.heatmaps import plt, save_figure, titled_picture_panel

COLOURS = ("tab:red", "tab:green", "tab:blue", "tab:purple")
"""One per candidate, in order: its marker on the belief and its route on the true map."""


@dataclass
class Candidate:
    """A move the robot could take at the decision."""

    title: str
    """Its panel's title, e.g. "the agent's move (p = 0.93): 212 cells to the end"."""
    target: tuple[int, int]
    """(row, col) of the node the move goes to."""
    route: np.ndarray
    """[L, 2] (row, col) of every cell the robot travels from the decision to the episode's end
    when it takes this move and greedy finishes, the robot's own cell first."""


def drawn_box(belief: np.ndarray, truth: np.ndarray, routes: list[np.ndarray], margin: int = 2
              ) -> tuple[tuple[int, int], tuple[int, int]]:
    """((top, left), (bottom, right)), bottom and right excluded: the smallest box holding every
    truly free cell, every cell the robot knows and every route cell, ``margin`` cells wider on
    each side within the map. A floor plan's rooms fill a part of its frame; the rest is wall."""
    rows, cols = np.nonzero(~truth | (belief != UNKNOWN))
    rows = np.concatenate([rows, *(route[:, 0] for route in routes)])
    cols = np.concatenate([cols, *(route[:, 1] for route in routes)])
    height, width = belief.shape
    return ((max(rows.min() - margin, 0), max(cols.min() - margin, 0)),
            (min(rows.max() + 1 + margin, height), min(cols.max() + 1 + margin, width)))


def decision_figure(belief: np.ndarray, truth: np.ndarray, candidates: list[Candidate], path: Path,
                    title: str = "") -> None:
    """``1 + len(candidates)`` panels of one state ([H, W] ``belief`` in ``env.sensing``'s codes and
    ``truth``, True = a wall): the belief with the robot (the routes' first cell) and each
    candidate's target, numbered; then per candidate the true map, the cells the robot has not
    seen tinted, with its route drawn in its colour, from a dot at the robot to a cross at the end.
    Every panel shows ``drawn_box``'s part of the map. Written to ``path``."""
    if belief.shape != truth.shape:
        raise ValueError(f"belief {belief.shape} and truth {truth.shape} must have one shape")
    if not 1 <= len(candidates) <= len(COLOURS):
        raise ValueError(f"{len(candidates)} candidates: draw 1 to {len(COLOURS)}")
    routes = [np.asarray(c.route).reshape(-1, 2) for c in candidates]
    if any(len(route) == 0 for route in routes):
        raise ValueError("every candidate needs a route of at least the robot's cell")
    (top, left), (bottom, right) = drawn_box(belief, truth, routes)
    belief, truth = belief[top:bottom, left:right], truth[top:bottom, left:right]
    routes = [route - (top, left) for route in routes]
    targets = [(c.target[0] - top, c.target[1] - left) for c in candidates]
    height, width = belief.shape
    fig, axes = plt.subplots(1, 1 + len(candidates), figsize=(4.2 * (1 + len(candidates)), 4.2 * height / width + 0.6))
    robot = routes[0][0]
    axes[0].imshow(belief_shade(belief), cmap="gray", vmin=0.0, vmax=1.0, interpolation="nearest")
    axes[0].plot(robot[1], robot[0], "o", color="black", markersize=6)
    for number, ((row, col), colour) in enumerate(zip(targets, COLOURS), start=1):
        axes[0].plot(col, row, "s", color=colour, markersize=7)
        axes[0].annotate(str(number), (col, row), xytext=(4, 4), textcoords="offset points", color=colour,
                         fontsize=10, fontweight="bold")
    titled_picture_panel(axes[0], "what the robot knows: its cell (dot), the moves (numbered)")
    tinted = unknown_tinted(truth, belief == UNKNOWN)
    for number, (ax, candidate, route, colour) in enumerate(zip(axes[1:], candidates, routes, COLOURS), start=1):
        ax.imshow(tinted, interpolation="nearest")
        ax.plot(route[:, 1], route[:, 0], "-", color=colour, linewidth=1.5)
        ax.plot(route[0, 1], route[0, 0], "o", color="black", markersize=6)
        ax.plot(route[-1, 1], route[-1, 0], "x", color=colour, markersize=8, markeredgewidth=2)
        titled_picture_panel(ax, f"{number}: {candidate.title}")
    if title:
        fig.suptitle(title, fontsize=11)
    save_figure(fig, path)
