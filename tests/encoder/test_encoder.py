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
    from encoder.graph import adjacency_from_neighbors

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
    from encoder.graph import adjacency_from_neighbors

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
    from encoder.graph import adjacency_from_neighbors

    encoder = make_encoder(4, impl).to(dtype)
    neighbors, node_mask = make_graph(2, 7, 3, seed=5, n_real=[3, 7])
    h = torch.randn(2, 7, D, dtype=dtype, requires_grad=True)
    out, _ = encoder(h, adjacency_from_neighbors(neighbors, node_mask))
    out.float().square().mean().backward()
    assert torch.isfinite(out).all() and torch.isfinite(h.grad).all()
    assert all(torch.isfinite(p.grad).all() for p in encoder.parameters())


@pytest.mark.parametrize("n_heads", HEAD_COUNTS)
def test_need_weights_gives_one_map_per_layer_and_head(n_heads, make_graph):
    from encoder.graph import adjacency_from_neighbors

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
