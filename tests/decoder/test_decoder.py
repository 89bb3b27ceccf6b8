"""Decoder: the current node attends over real nodes only."""
import pytest
import torch

from decoder.layers import Decoder
from encoder.attention import ATTENTION_IMPLS
from tests.helpers import HEAD_COUNTS

D = 32


@pytest.mark.parametrize("impl", ATTENTION_IMPLS)
@pytest.mark.parametrize("n_heads", HEAD_COUNTS)
def test_padding_nodes_do_not_reach_the_current_node(n_heads, impl):
    torch.manual_seed(0)
    decoder = Decoder(D, n_heads, n_layers=2, ff_dim=64, attention_impl=impl)
    node_mask = torch.tensor([[True, True, True, False, False], [True, True, True, True, True]])
    memory, tgt = torch.randn(2, 5, D), torch.randn(2, 1, D)
    noisy = torch.where(node_mask.unsqueeze(-1), memory, torch.randn(2, 5, D))
    out, _ = decoder(tgt, memory, node_mask)
    assert torch.equal(decoder(tgt, noisy, node_mask)[0][0], out[0])
    assert not torch.allclose(decoder(tgt, noisy + 1e-1 * torch.randn(2, 5, D), node_mask)[0], out)
    out_with_weights, attention = decoder(tgt, memory, node_mask, need_weights=True)
    torch.testing.assert_close(out_with_weights, out)
    assert len(attention) == 2
    for weights in attention:
        assert weights.shape == (2, n_heads, 1, 5)
        assert torch.equal(weights[0, :, :, 3:], torch.zeros(n_heads, 1, 2))
        torch.testing.assert_close(weights.sum(-1), torch.ones(2, n_heads, 1))


def test_decoder_uses_one_layer_norm_for_target_and_memory_as_the_reference():
    decoder = Decoder(D, 4, n_layers=1, ff_dim=64)
    layer_norms = [m for m in decoder.layers[0].modules() if isinstance(m, torch.nn.LayerNorm)]
    assert len(layer_norms) == 2  # normalization1 (target and memory) and normalization2
