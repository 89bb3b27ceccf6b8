"""The observation layout shared by the environment and the policy: defined here, once.

Every array has a fixed shape so that vector envs and rollout buffers can stack them. Boolean
masks follow the project's one rule: **True (1) = present / allowed** (see ``docs/reading-guide.md``).

| key             | shape, dtype          | meaning                                                   |
| --------------- | --------------------- | --------------------------------------------------------- |
| ``node_features`` | [N_max, F] float32  | per node, in the order of ``NODE_FEATURE_NAMES``          |
| ``node_mask``     | [N_max] int8        | 1 for a real node, 0 for padding                          |
| ``neighbors``     | [N_max, K] int64    | neighbour indices of each node (self included), -1 = pad  |
| ``current_index`` | scalar int64        | index of the node the robot stands on                     |
| ``action_mask``   | [K] int8            | 1 for a candidate slot the robot may move to              |

Action: an integer slot ``k < K``; the robot moves to ``neighbors[current_index, k]``.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium import spaces

from env.context import CONTEXT_FEATURE_NAMES, PRIVILEGED_FEATURE_NAMES

NODE_FEATURES = "node_features"
NODE_MASK = "node_mask"
NEIGHBORS = "neighbors"
CURRENT_INDEX = "current_index"
ACTION_MASK = "action_mask"
OBSERVATION_KEYS = (NODE_FEATURES, NODE_MASK, NEIGHBORS, CURRENT_INDEX, ACTION_MASK)

# Columns of ``node_features``. Positions are relative to the robot and divided by the map's
# larger side, so they lie in [-1, 1]; utility is divided by its normaliser and clipped to [0, 1];
# ``visited`` is 1 for nodes the robot has stood on (the reference's ``guidepost`` column means
# this); ``guidepost`` here is 1 for the nodes of the shortest path from the robot to the nearest
# node with utility (robot's node excluded), the meaning later marmotlab code gives the name
# (docs/reading-guide.md, "Node features").
# With ``context_features=True`` the columns of ``env.context.CONTEXT_FEATURE_NAMES`` follow, then
# with ``privileged_features=True`` those of ``PRIVILEGED_FEATURE_NAMES``.
NODE_FEATURE_NAMES = ("rel_x", "rel_y", "utility", "visited", "guidepost")
N_NODE_FEATURES = len(NODE_FEATURE_NAMES)


def node_feature_names(context_features: bool = False, privileged_features: bool = False) -> tuple[str, ...]:
    """The columns of ``node_features``, in order, with or without the context and privileged features."""
    return (NODE_FEATURE_NAMES + (CONTEXT_FEATURE_NAMES if context_features else ())
            + (PRIVILEGED_FEATURE_NAMES if privileged_features else ()))


def env_feature_names(env_kwargs: Mapping[str, Any]) -> tuple[str, ...]:
    """The columns of ``node_features`` of an env made with these keyword arguments."""
    return node_feature_names(bool(env_kwargs.get("context_features", False)),
                              bool(env_kwargs.get("privileged_features", False)))


def n_node_features(env_kwargs: Mapping[str, Any]) -> int:
    """F, the columns of ``node_features`` of an env made with these keyword arguments."""
    return len(env_feature_names(env_kwargs))

PADDING_NEIGHBOR = -1


def observation_space(n_max: int, k: int, n_features: int = N_NODE_FEATURES) -> spaces.Dict:
    """The gymnasium space of one observation for a graph of at most ``n_max`` nodes, ``k`` slots
    and ``n_features`` node features."""
    if n_max < 1 or k < 1:
        raise ValueError(f"n_max and k must be >= 1, got n_max={n_max}, k={k}")
    return spaces.Dict(
        {
            NODE_FEATURES: spaces.Box(-1.0, 1.0, shape=(n_max, n_features), dtype=np.float32),
            NODE_MASK: spaces.MultiBinary(n_max),
            NEIGHBORS: spaces.Box(PADDING_NEIGHBOR, n_max - 1, shape=(n_max, k), dtype=np.int64),
            CURRENT_INDEX: spaces.Discrete(n_max),
            ACTION_MASK: spaces.MultiBinary(k),
        }
    )
