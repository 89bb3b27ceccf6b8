import torch

from encoder.adjacency import adjacency_from_neighbors


def test_adjacency_matches_hand_built_example():
    # 3 real nodes + 1 padding node; node 2 lists the padding node 3, which must be dropped.
    neighbors = torch.tensor([[[0, 1, -1], [1, 0, 2], [2, 3, -1], [3, 0, 1]]])
    node_mask = torch.tensor([[True, True, True, False]])
    expected = torch.tensor(
        [[[1, 1, 0, 0], [1, 1, 1, 0], [0, 0, 1, 0], [0, 0, 0, 0]]], dtype=torch.bool
    )
    assert torch.equal(adjacency_from_neighbors(neighbors, node_mask), expected)


def test_adjacency_equals_loop_over_slots(make_graph):
    neighbors, node_mask = make_graph(3, 9, 4, seed=0)
    expected = torch.zeros(3, 9, 9, dtype=torch.bool)
    for b in range(3):
        for i in range(9):
            for j in neighbors[b, i].tolist():
                if j >= 0 and node_mask[b, i] and node_mask[b, j]:
                    expected[b, i, j] = True
    assert torch.equal(adjacency_from_neighbors(neighbors, node_mask), expected)
