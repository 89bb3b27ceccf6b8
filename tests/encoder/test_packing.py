"""The encoder over packed batches (real nodes only) against the padded path, and the packing itself."""
import pytest
import torch

from encoder import packing
from encoder.adjacency import adjacency_from_neighbors
from encoder.attention import MultiHeadAttention
from encoder.layers import Encoder
from encoder.packing import ROW_QUANTUM, graph_attention, pack, pad_rows

D = 32


def batch(make_graph, seed=0):
    """Four graphs of 3 to 19 real nodes padded to 19, with a random node embedding each."""
    neighbors, node_mask = make_graph(4, 19, 5, seed=seed, n_real=[7, 19, 3, 12])
    g = torch.Generator().manual_seed(seed)
    return torch.randn(4, 19, D, generator=g), adjacency_from_neighbors(neighbors, node_mask), node_mask


def encoder(impl):
    torch.manual_seed(0)
    return Encoder(D, 4, 3, 64, attention_impl=impl)


def test_pack_lists_each_real_nodes_allowed_keys_as_rows(make_graph):
    h, adjacency, node_mask = batch(make_graph)
    x, neighborhoods = pack(h, adjacency, node_mask)
    assert torch.equal(x[0], h[node_mask])
    assert neighborhoods.graph_rows.tolist() == [0, 7, 26, 29, 41]
    rows = [(b, i) for b in range(4) for i in range(19) if node_mask[b, i]]  # row r is node rows[r]
    for r, (b, i) in enumerate(rows):
        keys = neighborhoods.keys[neighborhoods.offsets[r]:neighborhoods.offsets[r + 1]].tolist()
        assert keys == sorted(keys)
        assert [rows[k] for k in keys] == [(b, j) for j in range(19) if adjacency[b, i, j] and node_mask[b, j]]


def outputs_and_grads(model, h, adjacency, node_mask, dtype):
    """(out, the input's gradient, the parameters' gradients) of a weighted sum of the real nodes' outputs."""
    model = model.to(dtype)
    x = h.detach().to(dtype).clone().requires_grad_()
    out, _ = model(x, adjacency, node_mask=node_mask)
    weights = torch.randn(out.shape, generator=torch.Generator().manual_seed(1))
    (out.float()[node_mask] * weights[node_mask]).sum().backward()
    return [out.float(), x.grad.float(), *(p.grad.float() for p in model.parameters())]


@pytest.mark.parametrize("impl", ["auto", "neighbors"])
def test_packed_encoder_matches_the_reference_path_on_real_nodes(monkeypatch, make_graph, impl):
    """Outputs and every gradient against the padded reference path; the packed path is the one
    taken (``pack`` called), and padding rows come out zero."""
    h, adjacency, node_mask = batch(make_graph, seed=3)
    packed_calls = []
    monkeypatch.setattr(packing, "pack", lambda *args: packed_calls.append(1) or pack(*args))
    ours = outputs_and_grads(encoder(impl), h, adjacency, node_mask, torch.float32)
    expected = outputs_and_grads(encoder("reference"), h, adjacency, node_mask, torch.float32)
    assert packed_calls == [1]
    assert torch.equal(ours[0][~node_mask], torch.zeros_like(ours[0][~node_mask]))
    ours[0], expected[0] = ours[0][node_mask], expected[0][node_mask]
    for a, b in zip(ours, expected):
        torch.testing.assert_close(a, b)


def test_packed_bf16_is_as_close_to_float32_as_the_padded_bf16(make_graph):
    """In bf16 the two paths round differently; the packed one must lie as near the float32
    result (outputs and all gradients together) as the padded one does."""
    h, adjacency, node_mask = batch(make_graph, seed=3)
    exact, packed, padded = (outputs_and_grads(encoder(impl), h, adjacency, node_mask, dtype) for impl, dtype in
                             (("reference", torch.float32), ("auto", torch.bfloat16), ("sdpa", torch.bfloat16)))
    for results in (exact, packed, padded):
        results[0] = results[0][node_mask]

    def error(results):
        return torch.cat([(a - e).flatten() for a, e in zip(results, exact)]).norm()

    assert 0 < error(packed) <= 1.5 * error(padded)


@pytest.mark.parametrize("impl", ["reference", "sdpa", "sparse"])
def test_other_implementations_and_attention_maps_keep_the_padded_path(monkeypatch, make_graph, impl):
    h, adjacency, node_mask = batch(make_graph)
    monkeypatch.setattr(packing, "pack", lambda *args: pytest.fail("packed"))
    encoder(impl)(h, adjacency, node_mask=node_mask)
    out, weights = encoder("auto")(h, adjacency, need_weights=True, node_mask=node_mask)
    assert len(weights) == 3


def test_a_dense_batch_keeps_the_padded_path_under_auto(monkeypatch, make_graph):
    """``auto`` takes SDPA, not the kernel, where most pairs are allowed: no packing then."""
    h = batch(make_graph)[0]
    monkeypatch.setattr(packing, "pack", lambda *args: pytest.fail("packed"))
    encoder("auto")(h, torch.ones(4, 19, 19, dtype=torch.bool), node_mask=torch.ones(4, 19, dtype=torch.bool))


def test_a_packed_batch_is_refused_for_weights_or_keys_other_than_values(make_graph):
    h, adjacency, node_mask = batch(make_graph)
    x, neighborhoods = pack(h, adjacency, node_mask)
    attention = encoder("auto").layers[0].multi_head_attention
    assert attention(x, mask=neighborhoods)[0].shape == x.shape
    for kwargs in ({"k": x}, {"v": x}, {"k": x, "v": x.clone()}, {"need_weights": True}):
        with pytest.raises(ValueError, match="attends without weights"):
            attention(x, mask=neighborhoods, **kwargs)


def test_one_query_row_a_graph_attends_to_its_graphs_rows_as_the_padded_decoder_mask_does(make_graph):
    """``graph_attention``'s lists: query b over graph b's real rows, against the reference path's
    [B,1,N] mask of real nodes; outputs and the gradients of queries, rows and weights."""
    h, adjacency, node_mask = batch(make_graph, seed=5)
    x, neighborhoods = pack(h, adjacency, node_mask)
    lists = graph_attention(neighborhoods, 4)
    assert lists.offsets.tolist() == [0, 7, 26, 29, 41] and torch.equal(lists.keys, torch.arange(41))
    tgt = torch.randn(4, 1, D, generator=torch.Generator().manual_seed(2))

    def outputs_and_grads(impl, packed):
        torch.manual_seed(0)
        attention = MultiHeadAttention(D, 4, attention_impl=impl)
        query = tgt.clone().requires_grad_()
        memory = (x if packed else h * node_mask.unsqueeze(-1)).clone().requires_grad_()
        if packed:
            out = attention(query.transpose(0, 1), memory, memory, mask=lists)[0].transpose(0, 1)  # [4,1,D]
        else:
            out = attention(query, memory, memory, mask=node_mask.unsqueeze(1))[0]
        out.square().sum().backward()
        memory_grad = memory.grad[0] if packed else memory.grad[node_mask]
        return [out, query.grad, memory_grad, *(p.grad for p in attention.parameters())]

    for a, b in zip(outputs_and_grads("auto", True), outputs_and_grads("reference", False)):
        torch.testing.assert_close(a, b)


def test_pad_rows_adds_rows_that_attend_to_nothing_and_change_no_real_row(make_graph):
    h, adjacency, node_mask = batch(make_graph, seed=2)
    x, neighborhoods = pack(h, adjacency, node_mask)  # 41 real rows
    padded, lists = pad_rows(x, neighborhoods, 16)
    assert padded.shape == (1, 48, D) and torch.equal(padded[0, 41:], torch.zeros(7, D))
    assert torch.equal(lists.offsets[:42], neighborhoods.offsets) and torch.equal(lists.keys, neighborhoods.keys)
    assert lists.offsets[41:].tolist() == [len(neighborhoods.keys)] * 8  # the added rows: no keys
    assert lists.graph_rows.tolist() == [*neighborhoods.graph_rows.tolist(), 48]  # a graph of their own
    assert pad_rows(padded, lists, 16)[0] is padded  # a multiple already: as it is
    layer = encoder("neighbors").layers[0]
    torch.testing.assert_close(layer(padded, lists)[0][:, :41], layer(x, neighborhoods)[0], rtol=1e-6, atol=1e-6)


def test_the_encoder_pads_packed_rows_in_bf16_only_and_real_nodes_keep_their_outputs(make_graph):
    """Under bf16 autocast the layers see a multiple of ``ROW_QUANTUM`` rows; outputs and input
    gradients of real nodes are those of the unpadded rows up to bf16 rounding; float32 is unpadded."""
    h, adjacency, node_mask = batch(make_graph, seed=4)
    model = encoder("auto")
    seen = []
    model.layers[0].register_forward_pre_hook(lambda module, args: seen.append(args[0].shape[1]))

    def run(quantum: int, dtype: torch.dtype):
        x = h.clone().requires_grad_()
        with pytest.MonkeyPatch.context() as patch, torch.autocast("cpu", dtype=dtype, enabled=dtype != torch.float32):
            patch.setattr(packing, "ROW_QUANTUM", quantum)  # 1: no padding
            out = model(x, adjacency, node_mask=node_mask)[0]
        out.float().square().sum().backward()
        return out.float(), x.grad

    padded, unpadded, float32 = run(ROW_QUANTUM, torch.bfloat16), run(1, torch.bfloat16), run(ROW_QUANTUM, torch.float32)
    assert seen == [ROW_QUANTUM, 41, 41]
    assert torch.equal(padded[0][~node_mask], torch.zeros_like(padded[0][~node_mask]))
    for a, b, exact in zip(padded, unpadded, float32):
        torch.testing.assert_close(a, b, rtol=0.02, atol=0.02)
        assert (a - exact).norm() <= 1.5 * (b - exact).norm() + 1e-6  # as near float32 as without padding
