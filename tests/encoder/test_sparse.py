"""The PyG edge-list path: converters against the dense adjacency and PyG's own utilities."""
import torch
from torch_geometric.utils import to_dense_adj, to_dense_batch

from encoder.adjacency import adjacency_from_neighbors
from encoder.sparse import edge_index_from_neighbors, from_pyg_nodes, to_pyg_batch


def test_edge_index_has_exactly_the_adjacency_edges(make_graph):
    neighbors, node_mask = make_graph(3, 8, 4, seed=0)
    B, N, _ = neighbors.shape
    source, target = edge_index_from_neighbors(neighbors, node_mask)
    dense = torch.zeros(B * N, B * N, dtype=torch.bool)
    dense[target, source] = True  # query (target) i attends to key (source) j
    expected = torch.block_diag(*adjacency_from_neighbors(neighbors, node_mask).int()).bool()
    assert torch.equal(dense, expected)
    assert source.numel() == int(expected.sum())  # no duplicate edges


def test_pyg_batch_round_trips_through_pyg_dense_utilities(make_graph):
    neighbors, node_mask = make_graph(3, 8, 4, seed=1, n_real=[5, 8, 2])
    features = torch.randn(3, 8, 4)
    batch = to_pyg_batch(features, node_mask, neighbors)
    assert batch.num_graphs == 3 and batch.num_nodes == 15
    dense_x, dense_mask = to_dense_batch(batch.x, batch.batch, max_num_nodes=8)
    assert torch.equal(dense_mask, node_mask)  # real nodes are a prefix here, as PyG lays them out
    assert torch.equal(dense_x[node_mask], features[node_mask])
    # PyG's to_dense_adj puts edge (source j, target i) at [j, i]: the transpose of ours.
    dense_adj = to_dense_adj(batch.edge_index, batch.batch, max_num_nodes=8).bool()
    assert torch.equal(dense_adj.transpose(1, 2), adjacency_from_neighbors(neighbors, node_mask))
    assert torch.equal(from_pyg_nodes(batch.x, node_mask), features * node_mask.unsqueeze(-1))


def test_non_prefix_node_mask_round_trips():
    node_mask = torch.tensor([[False, True, True, False, True]])
    neighbors = torch.tensor([[[-1, -1], [1, 2], [2, 4], [-1, -1], [4, 1]]])
    features = torch.arange(5.0).view(1, 5, 1)
    batch = to_pyg_batch(features, node_mask, neighbors)
    assert batch.x.flatten().tolist() == [1.0, 2.0, 4.0]
    assert sorted(map(tuple, batch.edge_index.t().tolist())) == [(0, 0), (0, 2), (1, 0), (1, 1), (2, 1), (2, 2)]
    assert torch.equal(from_pyg_nodes(batch.x, node_mask), features * node_mask.unsqueeze(-1))
