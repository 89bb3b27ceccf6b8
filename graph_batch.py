"""From the environment's observations to the tensors ``PolicyNet`` reads: one named step, outside the model.

``collate(obs)`` converts, validates and trims; ``PolicyNet`` then sees only a ``GraphBatch``.
``forward_observations(policy, obs, size_buckets)`` is the call the PPO update makes: it collates
and runs the policy, optionally in slices of similar graph size. ``forward_groups(policy, obs,
groups)`` is the collectors' call: one forward per group of envs, whose rows depend on that group alone.

Shape legend: B batch, N nodes (after trimming), K candidate slots, F node features.
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from encoder.adjacency import adjacency_from_neighbors
from env.episode import Actor
from env.observation import ACTION_MASK, CURRENT_INDEX, NEIGHBORS, NODE_FEATURES, NODE_MASK


@dataclass
class GraphBatch:
    """A batch of observations as the model consumes them; every mask is bool, True = present / allowed."""

    node_features: Tensor
    """[B,N,F] float32, the observation's ``node_features`` (the reference's ``node_inputs``)."""
    node_mask: Tensor
    """[B,N] bool, True for a real node (the reference's ``node_padding_mask``, negated)."""
    adjacency: Tensor
    """[B,N,N] bool, True where node i may attend to node j (the reference's ``edge_mask``, negated)."""
    current_index: Tensor
    """[B] long, the robot's node."""
    candidates: Tensor
    """[B,K] long, the node behind each action slot (the robot's neighbour list); an empty slot
    holds node 0 and is masked by ``action_mask``."""
    action_mask: Tensor
    """[B,K] bool, True for a slot the robot may take (the reference's ``edge_padding_mask``, negated)."""


def collate(obs: Mapping[str, Any], device: torch.device | str = "cpu") -> GraphBatch:
    """One observation or a batch of them (numpy or torch, the env's layout) as a ``GraphBatch``.

    Three things happen here, so the model can be read without them:
      1. conversion to tensors on ``device``, masks to bool, a single observation gets B = 1;
      2. validation: ``current_index`` must be a real node in every observation;
      3. trimming: nodes after the batch's last real node are padding, which never changes a
         real node's output (tested), so they are dropped. Early in an episode most of N_max is
         padding, and attention costs O(N^2) per layer (``docs/performance.md``).
    """
    def tensor(key: str, dtype: torch.dtype) -> Tensor:
        value = obs[key]
        value = value if isinstance(value, Tensor) else torch.from_numpy(np.asarray(value))
        return value.to(device=device, dtype=dtype)

    node_features = tensor(NODE_FEATURES, torch.float32)
    node_mask, neighbors = tensor(NODE_MASK, torch.bool), tensor(NEIGHBORS, torch.long)
    current_index, action_mask = tensor(CURRENT_INDEX, torch.long), tensor(ACTION_MASK, torch.bool)
    if node_features.dim() == 2:  # a single observation: add the batch dimension
        node_features, node_mask, neighbors, action_mask = (
            x.unsqueeze(0) for x in (node_features, node_mask, neighbors, action_mask))
    current_index = current_index.reshape(-1)  # [B]
    batch = torch.arange(len(current_index), device=device)
    if not node_mask[batch, current_index].all():
        raise ValueError("current_index must point at a real node (node_mask True) in every observation")

    n_used = int(node_mask.any(dim=0).nonzero().max()) + 1
    node_mask, neighbors = node_mask[:, :n_used], neighbors[:, :n_used]
    return GraphBatch(
        node_features=node_features[:, :n_used],
        node_mask=node_mask,
        adjacency=adjacency_from_neighbors(neighbors, node_mask),
        current_index=current_index,
        candidates=neighbors[batch, current_index].clamp(min=0),
        action_mask=action_mask,
    )


def forward_observations(policy: nn.Module, obs: Mapping[str, Tensor], size_buckets: int = 1,
                         trunk_dtype: torch.dtype = torch.float32) -> tuple[Tensor, Tensor]:
    """``policy(collate(obs), trunk_dtype=trunk_dtype)`` -> (logits [B,K], values [B]), in the order of ``obs``.

    With ``size_buckets`` > 1 the batch is sorted by graph size and run as that many calls on
    consecutive slices. One call trims padding only down to its largest graph, so early-episode
    observations would pay attention over the batch's largest late-episode graph; sorted slices
    each pay for their own. The outputs are the same up to float rounding, and so are the
    gradients of a loss on them (tested); ``docs/performance.md`` has the speed-up.
    """
    device = next(policy.parameters()).device
    if size_buckets <= 1:
        return policy(collate(obs, device), trunk_dtype=trunk_dtype)
    obs = {key: torch.as_tensor(value) for key, value in obs.items()}
    order = obs[NODE_MASK].sum(-1).argsort(stable=True)  # [B], smallest graph first
    parts = [policy(collate({key: value[index] for key, value in obs.items()}, device), trunk_dtype=trunk_dtype)
             for index in order.tensor_split(min(size_buckets, len(order)))]
    logits, values = torch.cat([p[0] for p in parts]), torch.cat([p[1] for p in parts])
    restore = order.argsort().to(device)  # back to the caller's order
    return logits[restore], values[restore]


@contextmanager
def torch_threads(count: int) -> Iterator[None]:
    """Run the block with ``torch.set_num_threads(count)``, then restore the thread count."""
    threads = torch.get_num_threads()
    if threads != count:
        torch.set_num_threads(count)
    try:
        yield
    finally:
        if threads != count:
            torch.set_num_threads(threads)


def one_torch_thread():
    """Run the block with ``torch.set_num_threads(1)``, then restore the thread count."""
    return torch_threads(1)


def forward_groups(policy: nn.Module, obs: Mapping[str, Any], groups: Sequence[range]) -> tuple[Tensor, Tensor]:
    """One batched ``policy(collate(...))`` per group of observations, on one torch thread, stacked
    in the order of ``obs``: (logits [B,K], values [B]). ``groups`` are consecutive ranges that
    cover ``range(B)``.

    Rows of a group depend on that group's observations alone, bit for bit, in any process: the
    collectors give each group of envs (``env.forward_group``) one pass, so a rollout is the same
    however whole groups are split across halves or Ray workers. A batched call does not promise
    more: its matrix products and trimming change with the batch's size and largest graph (up to
    5e-6 on the floor-plan network), and torch's CPU kernels round differently with another
    thread count (about 1e-6). Groups of one are ``forward_each``. A group of 4 floor-plan
    observations costs 0.46-0.56x its 4 single passes (``docs/performance.md``).
    """
    device = next(policy.parameters()).device
    if [i for group in groups for i in group] != list(range(len(obs[CURRENT_INDEX]))):
        raise ValueError(f"groups {list(groups)} do not cover the {len(obs[CURRENT_INDEX])} observations in order")
    with one_torch_thread():
        outputs = [policy(collate({key: value[group.start:group.stop] for key, value in obs.items()}, device))
                   for group in groups]
    return torch.cat([logits for logits, _ in outputs]), torch.cat([values for _, values in outputs])


def forward_each(policy: nn.Module, obs: Mapping[str, Any]) -> tuple[Tensor, Tensor]:
    """``forward_groups`` with one observation per group: row i depends on observation i alone.
    The argmax actor of evaluations and the critic's bootstrap values use it, so an evaluation
    is the same however the maps are split across processes or machines."""
    return forward_groups(policy, obs, [range(i, i + 1) for i in range(len(obs[CURRENT_INDEX]))])


def consecutive_groups(indices: Sequence[int], size: int) -> list[range]:
    """Positions in ``indices`` (global env indices, ascending) grouped by ``index // size``:
    envs 0-3, 4-7, ... for size 4, whichever of them ``indices`` holds."""
    groups: list[range] = []
    for position, index in enumerate(indices):
        if groups and indices[groups[-1].start] // size == index // size:
            groups[-1] = range(groups[-1].start, position + 1)
        else:
            groups.append(range(position, position + 1))
    return groups


def argmax_actor(policy: nn.Module) -> Actor:
    """The trained policy, taking its most probable valid move (the argmax of its logits)."""

    def act(obs: dict, env: object) -> int:
        with torch.no_grad():  # one observation: forward_each's bits, the same in any process
            logits, _ = forward_each(policy, {key: np.asarray(value)[None] for key, value in obs.items()})
        return int(logits.argmax(-1).item())

    return act
