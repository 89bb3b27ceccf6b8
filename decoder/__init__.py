"""The decoder: the current node's cross-attention over all nodes, and the pointer over its neighbours."""
from decoder.layers import Decoder, DecoderLayer
from decoder.pointer import SingleHeadAttention

__all__ = ["Decoder", "DecoderLayer", "SingleHeadAttention"]
