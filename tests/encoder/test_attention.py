"""MultiHeadAttention against torch's and PyG's attention, and its implementations against each other."""
import pytest
import torch
from torch import nn
from torch_geometric.nn import TransformerConv

from encoder.attention import ATTENTION_IMPLS, MultiHeadAttention
from tests.helpers import HEAD_COUNTS

D = 32


def make_inputs(B=3, Nq=6, Nk=7, seed=0, empty_rows=True):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(B, Nq, D, generator=g)
    kv = torch.randn(B, Nk, D, generator=g)
    mask = torch.rand(B, Nq, Nk, generator=g) < 0.5
    mask[:, :, 0] = True  # every row has a key...
    if empty_rows:
        mask[0, 1] = False  # ...except these: padding queries
        mask[2, -1] = False
    return q, kv, mask


def attention_module(n_heads, impl, seed=0):
    torch.manual_seed(seed)
    return MultiHeadAttention(D, n_heads, attention_impl=impl)


@pytest.mark.parametrize("impl", ATTENTION_IMPLS)
@pytest.mark.parametrize("n_heads", HEAD_COUNTS)
def test_equals_torch_multihead_attention(n_heads, impl):
    ours = attention_module(n_heads, impl)
    theirs = nn.MultiheadAttention(D, n_heads, bias=False, batch_first=True)
    with torch.no_grad():
        theirs.in_proj_weight.copy_(torch.cat([ours.w_query.weight, ours.w_key.weight, ours.w_value.weight]))
        theirs.out_proj.weight.copy_(ours.w_out.weight)
    q, kv, mask = make_inputs(empty_rows=False)  # torch gives NaN for a row with no key
    out, weights = ours(q, kv, kv, mask=mask, need_weights=True)
    # torch's boolean attn_mask has the reference's polarity: True = NOT allowed.
    blocked = (~mask).repeat_interleave(n_heads, dim=0)  # [B*H,Nq,Nk]
    expected, expected_weights = theirs(q, kv, kv, attn_mask=blocked, need_weights=True, average_attn_weights=False)
    torch.testing.assert_close(out, expected)
    torch.testing.assert_close(weights, expected_weights)


@pytest.mark.parametrize("impl", ATTENTION_IMPLS)
@pytest.mark.parametrize("n_heads", HEAD_COUNTS)
def test_equals_pyg_transformer_conv_on_neighbor_masks(n_heads, impl, make_graph):
    from encoder.adjacency import adjacency_from_neighbors
    from encoder.sparse import edge_index_from_neighbors

    ours = attention_module(n_heads, impl)
    with torch.no_grad():
        ours.w_out.weight.copy_(torch.eye(D))  # TransformerConv has no output projection
    conv = TransformerConv(D, D // n_heads, heads=n_heads, concat=True, bias=False, root_weight=False)
    with torch.no_grad():
        conv.lin_query.weight.copy_(ours.w_query.weight)
        conv.lin_key.weight.copy_(ours.w_key.weight)
        conv.lin_value.weight.copy_(ours.w_value.weight)
    neighbors, node_mask = make_graph(2, 8, 4, seed=1)
    x = torch.randn(2, 8, D)
    out, _ = ours(x, mask=adjacency_from_neighbors(neighbors, node_mask))
    expected = conv(x.reshape(16, D), edge_index_from_neighbors(neighbors, node_mask)).view(2, 8, D)
    torch.testing.assert_close(out[node_mask], expected[node_mask])


@pytest.mark.parametrize("n_heads", HEAD_COUNTS)
def test_implementations_agree_in_outputs_weights_and_gradients(n_heads):
    q, kv, mask = make_inputs()
    results = {}
    for impl in ATTENTION_IMPLS:
        module = attention_module(n_heads, impl)
        q_, kv_ = q.clone().requires_grad_(), kv.clone().requires_grad_()
        out, _ = module(q_, kv_, kv_, mask=mask)
        (out * torch.linspace(-1, 1, D)).sum().backward()  # a loss that weighs every output
        _, weights = module(q, kv, kv, mask=mask, need_weights=True)
        grads = [q_.grad, kv_.grad] + [p.grad for p in module.parameters()]
        results[impl] = (out.detach(), weights, grads)
    reference = results.pop("reference")
    for impl in results:
        torch.testing.assert_close(results[impl][0], reference[0])
        torch.testing.assert_close(results[impl][1], reference[1])
        for grad, expected in zip(results[impl][2], reference[2]):
            torch.testing.assert_close(grad, expected)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("density", ["sparse", "dense"])
@pytest.mark.parametrize("impl", ATTENTION_IMPLS)
@pytest.mark.parametrize("n_heads", HEAD_COUNTS)
def test_padding_rows_are_exact_zeros_on_the_path_training_takes(n_heads, impl, density, dtype):
    """need_weights=False, as in training, so each implementation runs its own path: SDPA's kernel,
    the C++ kernel (``neighbors``; ``auto`` on the sparse mask, on the CPU), PyG's scatter
    (``sparse``). A padding row's output, and every gradient of a loss on padding rows alone, are
    exact zeros. On the CPU, where this runs (on a GPU ``neighbors`` and ``auto`` hand over to SDPA)."""
    from encoder.attention import prefers_neighbors

    # 40 nodes; about 1 key in 10 allowed ("sparse": auto takes the kernel) or 9 in 10 ("dense": SDPA).
    g = torch.Generator().manual_seed(1)
    q, kv = torch.randn(2, 40, D, generator=g), torch.randn(2, 40, D, generator=g)
    mask = torch.rand(2, 40, 40, generator=g) < (0.1 if density == "sparse" else 0.9)
    mask[:, :, 0] = True
    padding = torch.zeros(2, 40, dtype=torch.bool)
    padding[0, 1] = padding[1, -1] = padding[1, 7] = True
    mask[padding] = False
    assert prefers_neighbors(mask) == (density == "sparse")

    module = attention_module(n_heads, impl).to(dtype)
    q, kv = q.to(dtype).requires_grad_(), kv.to(dtype).requires_grad_()
    out, weights = module(q, kv, kv, mask=mask)
    assert weights is None
    inputs = [q, kv, *module.parameters()]
    from_padding = torch.autograd.grad(out[padding].float().sum(), inputs, retain_graph=True)
    from_all = torch.autograd.grad(out.float().square().sum(), inputs)
    zeros = torch.zeros(3, D, dtype=dtype)
    assert torch.equal(out[padding], zeros)
    for grad in from_padding:  # nothing flows back from a padding row, to inputs or weights
        assert torch.equal(grad, torch.zeros_like(grad))
    assert torch.equal(from_all[0][padding], zeros)
    for tensor in (out, *from_all):
        assert torch.isfinite(tensor).all()
    assert from_all[0].abs().sum() > 0  # the real rows do have gradients: the check is not vacuous


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("impl", ATTENTION_IMPLS)
@pytest.mark.parametrize("n_heads", HEAD_COUNTS)
def test_padding_rows_are_exact_zeros_with_weights(n_heads, impl, dtype):
    """need_weights=True (heat maps): ``sdpa``, ``neighbors`` and ``auto`` take the reference path here."""
    module = attention_module(n_heads, impl).to(dtype)
    q, kv, mask = make_inputs()
    q, kv = q.to(dtype).requires_grad_(), kv.to(dtype).requires_grad_()
    out, weights = module(q, kv, kv, mask=mask, need_weights=True)
    out.float().square().sum().backward()
    assert torch.equal(out[0, 1], torch.zeros(D, dtype=dtype))
    assert torch.equal(out[2, -1], torch.zeros(D, dtype=dtype))
    assert torch.equal(weights[0, :, 1], torch.zeros_like(weights[0, :, 1]))
    assert torch.equal(q.grad[0, 1], torch.zeros(D, dtype=dtype))  # nothing flows back from a padding row
    for tensor in [out, weights, q.grad, kv.grad] + [p.grad for p in module.parameters()]:
        assert torch.isfinite(tensor).all()


@pytest.mark.parametrize("impl", ATTENTION_IMPLS)
def test_weights_sum_to_one_over_allowed_keys_only(impl):
    q, kv, mask = make_inputs()
    _, weights = attention_module(4, impl)(q, kv, kv, mask=mask, need_weights=True)
    assert torch.equal(weights[~mask.unsqueeze(1).expand_as(weights)], torch.zeros(int((~mask).sum()) * 4))
    row_sums = weights.sum(-1)  # [B,H,Nq]
    has_key = mask.any(-1).unsqueeze(1).expand_as(row_sums)
    torch.testing.assert_close(row_sums[has_key], torch.ones(int(has_key.sum())))


def test_self_attention_defaults_k_and_v_to_q_and_leaves_inputs_untouched():
    module = attention_module(2, "reference")
    q, _, mask = make_inputs(Nk=6)
    q_before, mask_before = q.clone(), mask.clone()
    torch.testing.assert_close(module(q, mask=mask)[0], module(q, q, q, mask=mask)[0])
    assert torch.equal(q, q_before) and torch.equal(mask, mask_before)


def test_bad_head_count_names_the_allowed_ones():
    with pytest.raises(ValueError, match=r"n_heads=3 must divide embed_dim=32; allowed head counts: \[1, 2, 4, 8, 16, 32\]"):
        MultiHeadAttention(32, 3)


def test_unknown_implementation_is_an_error():
    with pytest.raises(ValueError, match=r"'attention_impl' must be one of \['reference', 'sdpa', 'sparse', 'neighbors', 'auto'\], got 'flash'"):
        MultiHeadAttention(32, 4, attention_impl="flash")


def test_integer_mask_is_refused_because_its_polarity_is_ambiguous():
    q, kv, mask = make_inputs()
    with pytest.raises(TypeError, match="torch.bool"):
        attention_module(2, "sdpa")(q, kv, kv, mask=mask.int())


def test_mismatched_shapes_are_reported():
    q, kv, _ = make_inputs()
    with pytest.raises(ValueError, match="expected q"):
        attention_module(2, "sdpa")(q, kv[..., :16])


def test_auto_takes_the_kernel_only_for_sparse_graphs_and_matches_the_reference(monkeypatch, make_graph):
    from encoder import attention
    from encoder.adjacency import adjacency_from_neighbors

    taken = []
    monkeypatch.setattr(attention, "neighbor_attention",
                        lambda *args: taken.append("neighbors") or attention.ATTENTION["neighbors"](*args))
    monkeypatch.setattr(attention, "sdpa_attention",
                        lambda *args: taken.append("sdpa") or attention.ATTENTION["sdpa"](*args))
    reference, auto = attention_module(2, "reference"), attention_module(2, "auto")
    # 5 slots per node (self and up to 4 neighbours): the kernel once 2 x the allowed pairs <= all pairs.
    for n, path in ((4, "sdpa"), (40, "neighbors")):  # 17 of 32 pairs allowed; about 160 of 3,200
        neighbors, node_mask = make_graph(2, n, 5, seed=n, n_real=[n, n - 1])
        mask = adjacency_from_neighbors(neighbors, node_mask)
        assert attention.NEIGHBORS_FROM_KEYS_PER_NEIGHBOR == 2
        assert attention.prefers_neighbors(mask) == (2 * mask.sum() <= 2 * n * n)
        x = torch.randn(2, n, D, requires_grad=True)
        out, _ = auto(x, mask=mask)
        expected, _ = reference(x, mask=mask)
        torch.testing.assert_close(out, expected)
        grad, = torch.autograd.grad(out.square().sum(), x)
        expected_grad, = torch.autograd.grad(expected.square().sum(), x)
        torch.testing.assert_close(grad, expected_grad)
        assert taken == [path]
        taken.clear()


def test_auto_falls_back_to_sdpa_with_a_warning_when_the_kernel_cannot_be_built(monkeypatch, make_graph):
    from encoder import attention
    from encoder.adjacency import adjacency_from_neighbors

    monkeypatch.setattr(attention, "kernel_error", lambda: "no compiler here")
    monkeypatch.setattr(attention, "neighbor_heads", lambda *args: pytest.fail("the kernel was called"))
    neighbors, node_mask = make_graph(2, 40, 5, seed=0, n_real=[40, 37])
    mask = adjacency_from_neighbors(neighbors, node_mask)
    x = torch.randn(2, 40, D)
    with pytest.warns(UserWarning, match="attention_impl auto takes SDPA: no compiler here"):
        out, _ = attention_module(2, "auto")(x, mask=mask)
    torch.testing.assert_close(out, attention_module(2, "reference")(x, mask=mask)[0])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_the_gpu_sdpa_path_gives_its_kernel_no_keyless_row_and_matches_the_reference(monkeypatch, dtype):
    """Off the CPU, ``sdpa_attention`` hands the fused kernel a mask in which every row has a key
    (a fused softmax over nothing is 0 / 0), and still returns zeros, with zero gradients, for the
    padding rows. Run here on the CPU through the function the GPU path calls."""
    import torch.nn.functional as F

    from encoder import attention

    seen = []
    sdpa = F.scaled_dot_product_attention
    monkeypatch.setattr(F, "scaled_dot_product_attention",
                        lambda *args, attn_mask, **kwargs: seen.append(attn_mask) or sdpa(*args, attn_mask=attn_mask, **kwargs))
    q, kv, mask = make_inputs()  # rows 1 of graph 0 and the last of graph 2 have no key
    g = torch.Generator().manual_seed(1)
    Q, K, V = (torch.randn(3, 4, n, 8, generator=g, dtype=dtype, requires_grad=True) for n in (6, 7, 7))
    heads = attention.keyless_rows_zeroed(Q, K, V, mask.unsqueeze(1), 0.35)
    assert len(seen) == 1 and seen[0].any(dim=-1).all()
    copies = [x.detach().float().requires_grad_() for x in (Q, K, V)]
    reference, _ = attention.reference_attention(*copies, mask, 0.35)
    grad = torch.randn(reference.shape, generator=g)
    reference.backward(grad)
    heads.backward(grad.to(dtype))
    tolerance = {} if dtype == torch.float32 else {"atol": 3e-2, "rtol": 3e-2}
    torch.testing.assert_close(heads.float(), reference, **tolerance)
    assert torch.equal(heads[0, :, 1], torch.zeros_like(heads[0, :, 1]))
    assert torch.equal(Q.grad[0, :, 1], torch.zeros_like(Q.grad[0, :, 1]))  # nothing flows back from padding
    for x, copy in zip((Q, K, V), copies):
        torch.testing.assert_close(x.grad.float(), copy.grad, **tolerance)
