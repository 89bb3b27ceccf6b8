"""``PolicyNet``: observation dict -> adjacency -> embedding -> Encoder -> Decoder -> (logits, value).

The glue between the environment's observation layout (``env/observation.py``) and the torch
modules in ``encoder/`` and ``decoder/``. Shape legend: B batch, N nodes (N_max), K candidate
slots, F node features, D embedding, H heads.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from config import ModelConfig
from decoder.layers import Decoder
from decoder.pointer import SingleHeadAttention
from encoder.graph import adjacency_from_neighbors
from encoder.layers import Encoder
from env.observation import (
    ACTION_MASK,
    CURRENT_INDEX,
    N_NODE_FEATURES,
    NEIGHBORS,
    NODE_FEATURES,
    NODE_MASK,
)


def observation_to_tensors(obs: Mapping[str, Any], device: torch.device | str = "cpu") -> dict[str, Tensor]:
    """One observation or a batch of them (numpy or torch) as batched tensors with bool masks.

    Returns ``node_features`` [B,N,F] float32, ``node_mask`` [B,N] bool, ``neighbors`` [B,N,K]
    long, ``current_index`` [B] long, ``action_mask`` [B,K] bool.
    """
    def tensor(key: str, dtype: torch.dtype) -> Tensor:
        value = obs[key]
        value = value if isinstance(value, Tensor) else torch.from_numpy(np.asarray(value))
        return value.to(device=device, dtype=dtype)

    batched = {
        NODE_FEATURES: tensor(NODE_FEATURES, torch.float32),
        NODE_MASK: tensor(NODE_MASK, torch.bool),
        NEIGHBORS: tensor(NEIGHBORS, torch.long),
        CURRENT_INDEX: tensor(CURRENT_INDEX, torch.long),
        ACTION_MASK: tensor(ACTION_MASK, torch.bool),
    }
    if batched[NODE_FEATURES].dim() == 2:  # a single observation: add the batch dimension
        batched = {key: value.unsqueeze(0) for key, value in batched.items()}
    batched[CURRENT_INDEX] = batched[CURRENT_INDEX].reshape(-1)
    return batched


class GraphTrunk(nn.Module):
    """Node embedding, ``Encoder`` and ``Decoder``: the part the actor and critic may share.

    Shapes: node_features [B,N,F], adjacency [B,N,N], node_mask [B,N], current_index [B]
    -> (current feature [B,1,D], node embeddings [B,N,D], attention dict).
    """

    def __init__(self, config: ModelConfig, n_node_features: int):
        super().__init__()
        D = config.embed_dim
        self.initial_embedding = nn.Linear(n_node_features, D)
        self.encoder = Encoder(D, config.n_heads, config.n_layers, config.ff_dim, config.attention_impl)
        self.decoder = Decoder(D, config.n_heads, config.n_decoder_layers, config.ff_dim, config.attention_impl)
        self.current_embedding = nn.Linear(2 * D, D)

    def forward(self, node_features, adjacency, node_mask, current_index, return_attention=False):
        B, N, _ = node_features.shape
        h = self.initial_embedding(node_features)  # [B,N,D]
        attention = {}
        if return_attention:
            h, attention["encoder"] = self.encoder(h, adjacency, return_attention=True)
        else:
            h = self.encoder(h, adjacency)
        batch = torch.arange(B, device=h.device)
        current = h[batch, current_index].unsqueeze(1)  # [B,1,D]
        if return_attention:
            enhanced, attention["decoder"] = self.decoder(current, h, node_mask, return_attention=True)
        else:
            enhanced = self.decoder(current, h, node_mask)
        current = self.current_embedding(torch.cat([enhanced, current], dim=-1))  # [B,1,2D] -> [B,1,D]
        return current, h, attention


class PolicyNet(nn.Module):
    """The actor-critic: a pointer over the current node's neighbours, and a state value.

    Args:
        config: sizes and switches (``ModelConfig``).
        n_node_features: F, columns of ``node_features`` (default: the environment's).

    ``forward(obs)`` takes an observation dict (numpy or torch, single or batched) and returns
    ``(logits [B,K], value [B])``; masked slots hold the dtype's most negative value, so they
    have probability 0 under ``Categorical(logits=logits)``. With ``return_attention=True`` a
    third item holds the encoder's and decoder's per-layer weights and the pointer's probabilities.
    """

    def __init__(self, config: ModelConfig, n_node_features: int = N_NODE_FEATURES):
        super().__init__()
        self.config = config
        self.actor_trunk = GraphTrunk(config, n_node_features)
        self.critic_trunk = GraphTrunk(config, n_node_features) if config.separate_critic else None
        self.pointer = SingleHeadAttention(config.embed_dim, config.tanh_clipping)
        self.value_head = nn.Linear(config.embed_dim, 1)

    def forward(self, obs: Mapping[str, Any], return_attention: bool = False):
        device = self.value_head.weight.device
        t = observation_to_tensors(obs, device)
        node_mask, current_index = t[NODE_MASK], t[CURRENT_INDEX]
        B, K = t[ACTION_MASK].shape
        batch = torch.arange(B, device=device)
        if not node_mask[batch, current_index].all():
            raise ValueError("current_index must point at a real node (node_mask True) in every observation")
        # Nodes after the batch's last real node are padding, which never changes a real node's
        # output (tested): drop them. Early in an episode most of N_max is padding, and
        # attention costs O(N^2) per layer (docs/performance.md).
        n_used = int(node_mask.any(dim=0).nonzero().max()) + 1
        node_mask, neighbors = node_mask[:, :n_used], t[NEIGHBORS][:, :n_used]
        adjacency = adjacency_from_neighbors(neighbors, node_mask)  # [B,N,N], N = n_used
        inputs = (t[NODE_FEATURES][:, :n_used], adjacency, node_mask, current_index)

        current, h, attention = self.actor_trunk(*inputs, return_attention=return_attention)
        candidates = neighbors[batch, current_index].clamp(min=0)  # [B,K]; empty slots are masked below
        candidate_features = h.gather(1, candidates.unsqueeze(-1).expand(B, K, h.shape[-1]))  # [B,K,D]
        logits = self.pointer(current, candidate_features, t[ACTION_MASK]).squeeze(1)  # [B,K]

        critic_current = current if self.critic_trunk is None else self.critic_trunk(*inputs)[0]
        value = self.value_head(critic_current).reshape(B)
        if not return_attention:
            return logits, value
        attention["pointer"] = torch.softmax(logits, dim=-1)
        return logits, value, attention
