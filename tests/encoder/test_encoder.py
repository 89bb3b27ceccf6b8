"""Encoder: locality, permutation equivariance, padding invariance, attention maps."""
import pytest
import torch

from encoder.attention import ATTENTION_IMPLS
from encoder.layers import Encoder
from tests.helpers import HEAD_COUNTS

D, N_LAYERS = 32, 2


def path_adjacency(N):
    """A path 0 - 1 - ... - N-1 with self loops: node j is |i - j| hops from node i."""
    index = torch.arange(N)
    return ((index.unsqueeze(0) - index.unsqueeze(1)).abs() <= 1).unsqueeze(0)  # [1,N,N]


def make_encoder(n_heads, impl="sdpa"):
    torch.manual_seed(0)
    return Encoder(D, n_heads, N_LAYERS, 64, attention_impl=impl).eval()


@pytest.mark.parametrize("n_heads", HEAD_COUNTS)
def test_a_node_sees_exactly_n_layers_hops(n_heads):
    encoder, N = make_encoder(n_heads), 8
    h = torch.randn(1, N, D)
    out = encoder(h, path_adjacency(N))[0]
    far, near = h.clone(), h.clone()
    # Random, not constant, changes: LayerNorm would erase a shift of every feature by one constant.
    far[0, N_LAYERS + 1] += torch.randn(D)  # n_layers + 1 hops from node 0
    near[0, N_LAYERS] += torch.randn(D)  # n_layers hops from node 0
    assert torch.equal(encoder(far, path_adjacency(N))[0][0, 0], out[0, 0])
    assert not torch.allclose(encoder(near, path_adjacency(N))[0][0, 0], out[0, 0])


@pytest.mark.parametrize("impl", ATTENTION_IMPLS)
@pytest.mark.parametrize("n_heads", HEAD_COUNTS)
def test_permuting_nodes_permutes_outputs(n_heads, impl, make_graph):
    from encoder.adjacency import adjacency_from_neighbors

    encoder = make_encoder(n_heads, impl)
    neighbors, node_mask = make_graph(2, 9, 4, seed=3, n_real=[9, 9])
    adjacency = adjacency_from_neighbors(neighbors, node_mask)
    h = torch.randn(2, 9, D)
    perm = torch.randperm(9, generator=torch.Generator().manual_seed(0))
    permuted, _ = encoder(h[:, perm], adjacency[:, perm][:, :, perm])
    torch.testing.assert_close(permuted, encoder(h, adjacency)[0][:, perm])


@pytest.mark.parametrize("impl", ATTENTION_IMPLS)
@pytest.mark.parametrize("n_heads", HEAD_COUNTS)
def test_padding_nodes_never_change_real_nodes(n_heads, impl, make_graph):
    from encoder.adjacency import adjacency_from_neighbors

    encoder = make_encoder(n_heads, impl)
    neighbors, node_mask = make_graph(3, 10, 4, seed=4, n_real=[6, 10, 3])
    adjacency = adjacency_from_neighbors(neighbors, node_mask)
    h = torch.randn(3, 10, D)
    noisy = torch.where(node_mask.unsqueeze(-1), h, 1e3 * torch.randn(3, 10, D))
    (out, _), (out_noisy, _) = encoder(h, adjacency), encoder(noisy, adjacency)
    assert torch.isfinite(out_noisy).all()
    assert torch.equal(out[node_mask], out_noisy[node_mask])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("impl", ATTENTION_IMPLS)
def test_padded_batch_has_no_nan_in_low_precision(impl, dtype, make_graph):
    from encoder.adjacency import adjacency_from_neighbors

    encoder = make_encoder(4, impl).to(dtype)
    neighbors, node_mask = make_graph(2, 7, 3, seed=5, n_real=[3, 7])
    h = torch.randn(2, 7, D, dtype=dtype, requires_grad=True)
    out, _ = encoder(h, adjacency_from_neighbors(neighbors, node_mask))
    out.float().square().mean().backward()
    assert torch.isfinite(out).all() and torch.isfinite(h.grad).all()
    assert all(torch.isfinite(p.grad).all() for p in encoder.parameters())


@pytest.mark.parametrize("n_heads", HEAD_COUNTS)
def test_need_weights_gives_one_map_per_layer_and_head(n_heads, make_graph):
    from encoder.adjacency import adjacency_from_neighbors

    neighbors, node_mask = make_graph(2, 6, 3, seed=6, n_real=[4, 6])
    adjacency = adjacency_from_neighbors(neighbors, node_mask)
    h = torch.randn(2, 6, D)
    out, attention = make_encoder(n_heads)(h, adjacency, need_weights=True)
    torch.testing.assert_close(out, make_encoder(n_heads)(h, adjacency)[0])
    assert len(attention) == N_LAYERS
    for weights in attention:
        assert weights.shape == (2, n_heads, 6, 6)
        assert torch.equal(weights * ~adjacency.unsqueeze(1), torch.zeros_like(weights))
        torch.testing.assert_close(weights.sum(-1), node_mask.float().unsqueeze(1).expand(2, n_heads, 6))


def test_wrong_adjacency_shape_is_reported():
    with pytest.raises(ValueError, match=r"adjacency must be \[B,N,N\]"):
        make_encoder(2)(torch.randn(1, 5, D), torch.ones(1, 5, 4, dtype=torch.bool))


def test_zero_layers_is_an_error():
    with pytest.raises(ValueError, match="n_layers must be >= 1"):
        Encoder(D, 2, 0, 64)


@pytest.mark.parametrize("impl", ATTENTION_IMPLS)
@pytest.mark.parametrize("n_heads", HEAD_COUNTS)
def test_the_encoder_is_torchs_pre_layernorm_transformer_encoder_with_a_mask(n_heads, impl):
    """The same weights in ``torch.nn.TransformerEncoder`` (pre-LayerNorm, ReLU, no dropout; our
    projections have no bias, so torch's are zero) give the same output under the same graph:
    what bench/encoder_vs_torch.py times is the same computation. torch's mask is the negation."""
    encoder, N = make_encoder(n_heads, impl), 7
    layer = torch.nn.TransformerEncoderLayer(D, n_heads, 64, dropout=0.0, batch_first=True, norm_first=True)
    theirs = torch.nn.TransformerEncoder(layer, N_LAYERS, enable_nested_tensor=False).eval()
    with torch.no_grad():
        for ours, torchs in zip(encoder.layers, theirs.layers):
            attention = ours.multi_head_attention
            torchs.self_attn.in_proj_weight.copy_(
                torch.cat([attention.w_query.weight, attention.w_key.weight, attention.w_value.weight]))
            torchs.self_attn.in_proj_bias.zero_()
            torchs.self_attn.out_proj.weight.copy_(attention.w_out.weight)
            torchs.self_attn.out_proj.bias.zero_()
            for mine, its in ((ours.normalization1, torchs.norm1), (ours.normalization2, torchs.norm2),
                              (ours.feed_forward[0], torchs.linear1), (ours.feed_forward[2], torchs.linear2)):
                its.load_state_dict(mine.state_dict())
    adjacency = path_adjacency(N).repeat(2, 1, 1)
    adjacency[1, 0, 3] = adjacency[1, 3, 0] = True  # a second graph, with a chord
    h = torch.randn(2, N, D)
    expected = theirs(h, mask=(~adjacency).repeat_interleave(n_heads, dim=0))
    torch.testing.assert_close(encoder(h, adjacency)[0], expected, atol=2e-5, rtol=1e-5)
