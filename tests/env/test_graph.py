import numpy as np
import pytest

from env.frontiers import frontier_mask
from env.geometry import line_cells
from env.grid_explore import GridExploreEnv
from env.sensing import FREE, OCCUPIED, UNKNOWN
from tests.helpers import viewpoint_graph, walled_room


def test_open_room_graph_is_the_full_lattice():
    graph = viewpoint_graph(walled_room())
    assert graph.n_nodes == 9
    assert {tuple(p) for p in graph.positions()} == {(r, c) for r in (1, 5, 9) for c in (1, 5, 9)}
    table = graph.neighbors()
    assert (table[:9, 0] == np.arange(9)).all() and (table[9:] == -1).all()
    centre = 0  # the start, (5, 5)
    assert sorted(table[centre, 1:]) == sorted(set(range(9)) - {centre})
    for node in range(9):  # edges are symmetric
        for other in table[node, 1:]:
            if other >= 0:
                assert node in table[other]
    assert not graph.utility.any()  # nothing unknown, no frontier


def test_known_wall_cuts_edges_and_unknown_cells_hold_nodes_back():
    belief = walled_room()
    belief[1:10, 7] = OCCUPIED
    belief[1:10, 8:10] = UNKNOWN
    graph = viewpoint_graph(belief)
    cols = {int(c) for _, c in graph.positions()}
    assert cols == {1, 5}  # the right lattice column is behind a wall and unknown
    centre = 0  # the start, (5, 5)
    assert graph.neighbors()[centre, 1:].tolist().count(-1) == 3  # the three hops to the right


def _brute_force_utility(belief: np.ndarray, position, utility_range: int) -> int:
    frontier = frontier_mask(belief)
    count = 0
    for r, c in np.argwhere(frontier):
        d = (r - position[0], c - position[1])
        if d[0] ** 2 + d[1] ** 2 <= utility_range**2:
            cells = line_cells(int(d[0]), int(d[1]))
            if all(belief[position[0] + i, position[1] + j] == FREE for i, j in cells):
                count += 1
    return count


@pytest.mark.parametrize("utility_range", [3, 4, 6])
def test_utility_counts_visible_frontier_cells(utility_range):
    belief = walled_room(13)
    belief[2:11, 9:12] = UNKNOWN
    belief[4, 3:7] = OCCUPIED  # hides part of the frontier from the top nodes
    belief[8, 8] = UNKNOWN
    graph = viewpoint_graph(belief, start=(6, 6), spacing=4, utility_range=utility_range)
    assert graph.utility.any()
    for node, position in enumerate(graph.positions()):
        assert graph.utility[node] == _brute_force_utility(belief, position, utility_range), position


def test_more_nodes_than_n_max_is_a_clear_error():
    with pytest.raises(ValueError, match=r"9 nodes, more than n_max=5; raise n_max or node_spacing"):
        viewpoint_graph(walled_room(), n_max=5)


def test_an_n_max_below_the_lattice_is_refused_before_any_episode(tmp_path):
    path = tmp_path / "room.npy"
    np.save(path, walled_room(21) == OCCUPIED)  # an open room: the first sweep reveals many nodes
    with pytest.raises(ValueError, match=r"n_max=3 is smaller than the 36 lattice nodes a 21x21 map can hold; "
                                         r"allowed: None or >= 36"):
        GridExploreEnv(map_file=str(path), n_max=3)


def test_small_k_keeps_the_nearest_neighbours():
    graph = viewpoint_graph(walled_room(), k=5)
    centre = 0  # the start, (5, 5)
    positions = graph.positions()
    hops = {tuple(positions[n] - positions[centre]) for n in graph.neighbors()[centre, 1:]}
    assert hops == {(-4, 0), (4, 0), (0, -4), (0, 4)}
