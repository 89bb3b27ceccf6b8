"""The graph encoder: multi-head self-attention over viewpoint-graph nodes, restricted to neighbours."""
from encoder.adjacency import adjacency_from_neighbors
from encoder.attention import ATTENTION_IMPLS, MultiHeadAttention
from encoder.layers import Encoder, EncoderLayer

__all__ = ["ATTENTION_IMPLS", "Encoder", "EncoderLayer", "MultiHeadAttention", "adjacency_from_neighbors"]
