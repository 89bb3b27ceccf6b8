"""Helpers shared by several test modules (test modules never import each other)."""
from __future__ import annotations

import copy
from pathlib import Path

import numpy as np

from config import load_config
from env.baselines import greedy
from env.frontiers import frontier_mask
from env.graph import ViewpointGraph
from env.sensing import FREE, OCCUPIED

HEAD_COUNTS = [1, 2, 4, 8]
ROOT = Path(__file__).parents[1]
SMOKE = ROOT / "configs" / "smoke.yaml"
GRAPH_PAD = 6
"""Wall cells around a hand-built belief, as the env pads its maps."""


def smoke_config(run_dir, *overrides):
    """``configs/smoke.yaml`` writing into ``run_dir``, with dotted overrides."""
    return load_config(SMOKE, [f"run.run_dir={run_dir}", *overrides])


def viewpoint_graph(belief: np.ndarray, start=(5, 5), spacing=4, k=9, n_max=50, utility_range=4) -> ViewpointGraph:
    """A graph over the unpadded ``belief`` (walls outside), updated once."""
    padded = np.pad(belief, GRAPH_PAD, constant_values=OCCUPIED)
    graph = ViewpointGraph(height=belief.shape[0], width=belief.shape[1], pad=GRAPH_PAD, start=start,
                           spacing=spacing, k=k, n_max=n_max, utility_range=utility_range)
    graph.update(padded.ravel(), frontier_mask(padded).ravel())
    return graph


def walled_room(size=11) -> np.ndarray:
    """A free ``size`` x ``size`` belief with a wall around its edge."""
    belief = np.full((size, size), FREE, dtype=np.int8)
    belief[[0, -1], :] = belief[:, [0, -1]] = OCCUPIED
    return belief


def greedy_return_by_hand(env, obs, terminated=False) -> float:
    """Greedy from here to the end in a plain deep copy, its moves counted from here."""
    world, total = copy.deepcopy(env.unwrapped), 0.0
    for _ in range(0 if terminated else world.config.max_steps):
        obs, reward, terminated, *_ = world.step(greedy(obs, world))
        total += reward
        if terminated:
            break
    return total
