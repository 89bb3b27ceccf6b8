"""``PolicyNet``: a ``GraphBatch`` -> embedding -> Encoder -> Decoder -> pointer -> (logits, value).

The model alone: observations become a ``GraphBatch`` in ``graph_batch.collate`` (conversion,
validation, trimming), and everything here is the architecture of ARiADNE /
large-scale-DRL-exploration. Shape legend: B batch, N nodes, K candidate slots, F node
features, D embedding, H heads.

    from graph_batch import collate
    logits, value = policy(collate(obs))                       # obs: the env's dict, single or batched
    logits, value, attention = policy(collate(obs), need_weights=True)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, overload

import torch
from torch import Tensor, nn

from config import Config, ModelConfig
from decoder import Decoder, SingleHeadAttention
from encoder import Encoder
from encoder.packing import trunk_rows
from env.observation import N_NODE_FEATURES, n_node_features
from graph_batch import GraphBatch


@dataclass
class AttentionWeights:
    """What the policy attended to, for heat maps and overlays (``viz/``)."""

    encoder: list[Tensor]
    """Per encoder layer, [B,H,N,N]: row i is node i's attention over its neighbours."""
    decoder: list[Tensor]
    """Per decoder layer, [B,H,1,N]: the current node's attention over all real nodes."""
    pointer: Tensor
    """[B,K], the policy's probability for each candidate slot (0 for masked slots)."""


class GraphTrunk(nn.Module):
    """Node embedding, ``Encoder``, ``Decoder``: the part the actor and a separate critic each have.

    Shapes: a ``GraphBatch`` -> (current node's feature [B,1,D], the candidate nodes' embeddings
    [B,K,D], encoder and decoder weights, or None without ``need_weights``).

    Where the encoder packs the batch (``Encoder.packs``: the CPU kernel, no weights asked for),
    the decoder and the candidates read the encoder's rows of real nodes directly
    (``encoder.packing.trunk_rows``): the same outputs up to float rounding, without a padded
    [B,N,D] after the encoder.
    """

    def __init__(self, config: ModelConfig, n_node_features: int):
        super().__init__()
        D = config.embed_dim
        self.initial_embedding = nn.Linear(n_node_features, D)
        self.encoder = Encoder(D, config.n_heads, config.n_layers, config.ff_dim, config.attention_impl)
        self.decoder = Decoder(D, config.n_heads, config.n_decoder_layers, config.ff_dim, config.attention_impl)
        self.current_embedding = nn.Linear(2 * D, D)

    def forward(self, batch: GraphBatch, need_weights: bool = False):
        B, K = batch.candidates.shape
        h = self.initial_embedding(batch.node_features)  # [B,N,F] -> [B,N,D]
        if self.encoder.packs(batch.adjacency, h.device, need_weights):
            return trunk_rows(self, batch, h)  # the fast path: real nodes only, encoder/packing.py
        h, encoder_weights = self.encoder(h, batch.adjacency, need_weights, batch.node_mask)  # [B,N,D]
        current = h[torch.arange(B, device=h.device), batch.current_index].unsqueeze(1)  # [B,1,D]
        enhanced, decoder_weights = self.decoder(current, h, batch.node_mask, need_weights)  # [B,1,D]
        current = self.current_embedding(torch.cat([enhanced, current], dim=-1))  # [B,1,2D] -> [B,1,D]
        candidates = h.gather(1, batch.candidates.unsqueeze(-1).expand(B, K, h.shape[-1]))  # [B,K,D]
        return current, candidates, encoder_weights, decoder_weights


class PolicyNet(nn.Module):
    """The actor-critic: a pointer over the current node's neighbours, and a state value.

    Args:
        config: sizes and switches (``ModelConfig``).
        n_node_features: F, columns of ``node_features`` (default: the environment's).

    ``forward(batch)`` returns ``(logits [B,K], value [B])``; masked slots hold the dtype's most
    negative value, so they have probability 0 under ``Categorical(logits=logits)``. With
    ``need_weights=True`` it returns ``(logits, value, AttentionWeights)``. ``trunk_dtype``
    ``torch.bfloat16`` runs the trunks (embedding, encoder, decoder) under ``torch.autocast``, their
    matrix products in bf16 (``ppo.update_dtype``); the pointer and the value head, and so the
    logits and the value, stay in the weights' type. The default, float32, means no autocast.

    Parameters sit under ``actor_trunk.`` (embedding, encoder, decoder), ``pointer.`` and
    ``value_head.``, plus ``critic_trunk.`` when ``separate_critic``. The reference's weights load
    with ``reference_weights.load_reference_weights``.
    """

    def __init__(self, config: ModelConfig, n_node_features: int = N_NODE_FEATURES):
        super().__init__()
        self.config, self.n_node_features = config, n_node_features
        self.actor_trunk = GraphTrunk(config, n_node_features)
        self.critic_trunk = GraphTrunk(config, n_node_features) if config.separate_critic else None
        self.pointer = SingleHeadAttention(config.embed_dim, config.tanh_clipping)
        self.value_head = nn.Linear(config.embed_dim, 1)

    @overload
    def forward(self, batch: GraphBatch, need_weights: Literal[False] = False,
                trunk_dtype: torch.dtype = torch.float32) -> tuple[Tensor, Tensor]: ...

    @overload
    def forward(self, batch: GraphBatch, need_weights: Literal[True],
                trunk_dtype: torch.dtype = torch.float32) -> tuple[Tensor, Tensor, AttentionWeights]: ...

    def forward(self, batch: GraphBatch, need_weights: bool = False, trunk_dtype: torch.dtype = torch.float32):
        B = batch.action_mask.shape[0]
        autocast = trunk_dtype != torch.float32
        with torch.autocast(batch.node_features.device.type, dtype=trunk_dtype, enabled=autocast):
            # the current node's feature [B,1,D], the candidates' embeddings [B,K,D]
            current, candidates, encoder_weights, decoder_weights = self.actor_trunk(batch, need_weights)
            critic_current = current if self.critic_trunk is None else self.critic_trunk(batch)[0]  # [B,1,D]
        if autocast:  # back to the weights' float type for the pointer and the value head
            current, candidates, critic_current = (x.to(self.value_head.weight.dtype)
                                                   for x in (current, candidates, critic_current))
        logits = self.pointer(current, candidates, batch.action_mask).squeeze(1)  # [B,1,K] -> [B,K]
        value = self.value_head(critic_current).reshape(B)  # [B]
        if not need_weights:
            return logits, value
        return logits, value, AttentionWeights(encoder_weights, decoder_weights, torch.softmax(logits, dim=-1))


def build_policy(config: Config) -> PolicyNet:
    """The ``PolicyNet`` of a run's config: its model settings, and as many node features as its
    env's observations have (5; 4 more with ``context_features``, 2 with ``privileged_features``)."""
    return PolicyNet(config.model, n_node_features(config.env.kwargs))
