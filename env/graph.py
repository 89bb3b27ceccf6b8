"""The viewpoint graph: lattice nodes over known free space, straight collision-free edges.

Nodes sit on a square lattice of ``spacing`` cells anchored at the robot's start cell, so the
robot, which only ever moves from node to node, always stands on a node. A lattice point becomes
a node once an edge reaches it from the robot's component; node indices are given in order of
discovery and never change within an episode. Edges join a node to its 8 lattice neighbours
(only the 4 axis-aligned ones when 5 <= K < 9) whose straight segment covers known-free cells
only. Because the belief only ever gains known cells and the world is static, a valid edge stays
valid: edges, nodes and indices only grow.

Per-node utility (the reference's "observable frontiers") counts the frontier cells within
``utility_range`` whose sight line from the node runs over known-free cells only.

The guidepost (large-scale-DRL-exploration's name) is the shortest graph path from the robot's
node to the nearest node with utility: the route a nearest-frontier planner would take.
"""
from __future__ import annotations

import heapq

import numpy as np

from env.geometry import line_cells, sight_table
from env.sensing import FREE, OCCUPIED

# Lattice steps: the 4 axis-aligned ones, then the 4 diagonals; within each group of four the
# opposite of step d is d + 2 (mod 4), which keeps every edge usable in both directions.
LATTICE_STEPS = ((-1, 0), (0, 1), (1, 0), (0, -1), (-1, 1), (1, 1), (1, -1), (-1, -1))


class ViewpointGraph:
    """Lattice viewpoint graph over a padded, flattened belief map (see the module docstring).

    Slot 0 of every node is the node itself; slot ``1 + d`` is the neighbour one lattice step in
    direction ``LATTICE_STEPS[d]``, or -1 when that edge does not (yet) exist.
    """

    def __init__(self, *, height: int, width: int, pad: int, start: tuple[int, int], spacing: int,
                 k: int, n_max: int, utility_range: int) -> None:
        self.height, self.width, self.pad, self.spacing = height, width, pad, spacing
        self.k, self.n_max = k, n_max
        self.stride = width + 2 * pad
        rows = np.arange(start[0] % spacing, height, spacing)
        cols = np.arange(start[1] % spacing, width, spacing)
        self.lattice_shape = (len(rows), len(cols))
        n_lattice = len(rows) * len(cols)
        rr, cc = np.meshgrid(rows, cols, indexing="ij")
        self.lattice_rc = np.stack([rr.ravel(), cc.ravel()], axis=1)
        self.lattice_flat = (self.lattice_rc[:, 0] + pad) * self.stride + self.lattice_rc[:, 1] + pad

        if k < 5:
            raise ValueError(f"k={k} is too small: the lattice needs 5 slots (self + 4 axis "
                             f"neighbours) or >= 9 (self + 8, diagonals included)")
        n_steps = 8 if k >= 9 else 4
        steps = np.array(LATTICE_STEPS[:n_steps], dtype=np.int64)
        self._opposite = np.array([d // 4 * 4 + (d + 2) % 4 for d in range(n_steps)])
        li, lj = np.divmod(np.arange(n_lattice), len(cols))
        ni, nj = li[:, None] + steps[:, 0], lj[:, None] + steps[:, 1]
        inside = (ni >= 0) & (ni < len(rows)) & (nj >= 0) & (nj < len(cols))
        # Index n_lattice is a sentinel "no lattice point" whose node is always -1.
        self.lattice_neighbor = np.where(inside, ni * len(cols) + nj, n_lattice)
        segments = [line_cells(int(di) * spacing, int(dj) * spacing) for di, dj in steps]
        self.segment = np.zeros((n_steps, max(len(s) for s in segments)), dtype=np.int64)
        for d, seg in enumerate(segments):
            self.segment[d, : len(seg)] = seg[:, 0] * self.stride + seg[:, 1]
        along = np.arange(spacing + 1)
        self._sweep_offset = along * (steps[:, :1] * self.stride + steps[:, 1:])
        self.step_length = spacing * np.hypot(steps[:, 0], steps[:, 1])
        self.edge_valid = np.zeros((n_lattice, len(steps)), dtype=bool)
        self.edge_undecided = inside.copy()

        self.utility_range = utility_range
        self._sight_cells, self._sight_between = sight_table(utility_range, self.stride)

        self.node_of_lattice = np.full(n_lattice + 1, -1, dtype=np.int64)
        self.lattice_of_node = np.zeros(n_max, dtype=np.int64)
        self.node_rc = np.zeros((n_max, 2), dtype=np.int64)
        self.n_nodes = 0
        self.utility = np.zeros(n_max, dtype=np.int64)
        self.visited = np.zeros(n_max, dtype=bool)
        self._add(np.array([self.lattice_index(start)]))

    def lattice_index(self, cell: tuple[int, int]) -> int:
        """Index of the lattice point at ``cell`` (which must be on the lattice)."""
        i, i_off = divmod(cell[0] - int(self.lattice_rc[0, 0]), self.spacing)
        j, j_off = divmod(cell[1] - int(self.lattice_rc[0, 1]), self.spacing)
        if i_off or j_off:
            raise ValueError(f"cell {cell} is not on the lattice")
        return i * self.lattice_shape[1] + j

    def _add(self, lattice: np.ndarray) -> None:
        total = self.n_nodes + lattice.size
        if not lattice.size:
            return
        if total > self.n_max:
            raise ValueError(
                f"the viewpoint graph has {total} nodes, more than n_max={self.n_max}; raise n_max "
                f"or node_spacing (spacing {self.spacing} on this {self.height}x{self.width} map "
                f"allows up to {len(self.lattice_rc)} nodes)")
        self.node_of_lattice[lattice] = np.arange(self.n_nodes, total)
        self.lattice_of_node[self.n_nodes : total] = lattice
        self.node_rc[self.n_nodes : total] = self.lattice_rc[lattice]
        self.n_nodes = total

    def update(self, belief: np.ndarray, frontier: np.ndarray) -> None:
        """Refresh edges, nodes and utilities after the (flat, padded) ``belief`` gained cells.

        ``frontier`` is the flat bool frontier mask of the same padded grid.
        """
        in_graph = self.node_of_lattice >= 0
        todo = self.lattice_of_node[: self.n_nodes]
        # Edges of nodes outside the graph matter only once the graph reaches them.
        todo = todo[self.edge_undecided[todo].any(axis=1)]
        while todo.size:
            self._decide_edges(belief, todo)
            reach = self.lattice_neighbor[todo][self.edge_valid[todo]]
            todo = np.unique(reach[~in_graph[reach]])
            self._add(todo)
            in_graph[todo] = True
        self._update_utility(belief, frontier)

    def _decide_edges(self, belief: np.ndarray, lattice: np.ndarray) -> None:
        """Settle what can be settled about the undecided edges of ``lattice`` points.

        A segment over known-free cells is valid for good; one known obstacle on it rules it out
        for good; otherwise it stays undecided. Both directions of an edge are set together.
        """
        undecided = self.edge_undecided[lattice]
        cells = belief[self.lattice_flat[lattice, None, None] + self.segment]  # [m, steps, cells]
        valid = (cells == FREE).all(axis=2) & undecided
        decided = valid | (cells == OCCUPIED).any(axis=2) & undecided
        rows, steps = np.nonzero(decided)
        ends = (lattice[rows], self.lattice_neighbor[lattice[rows], steps])
        back = self._opposite[steps]
        self.edge_undecided[ends[0], steps] = False
        self.edge_undecided[ends[1], back] = False
        is_valid = valid[rows, steps]
        self.edge_valid[ends[0][is_valid], steps[is_valid]] = True
        self.edge_valid[ends[1][is_valid], back[is_valid]] = True

    def _update_utility(self, belief: np.ndarray, frontier: np.ndarray) -> None:
        origin = self.lattice_flat[self.lattice_of_node[: self.n_nodes]]
        # Frontier cells in each node's utility disc first (cheap), sight lines only for those.
        node, cell = np.nonzero(frontier[origin[:, None] + self._sight_cells])
        between = belief[origin[node, None] + self._sight_between[cell]]
        clear = (between == FREE).all(axis=1)
        self.utility[:] = 0
        self.utility[: self.n_nodes] = np.bincount(node[clear], minlength=self.n_nodes)

    def _step_neighbors(self) -> np.ndarray:
        """[n_nodes, steps] the node one lattice step away in each direction, -1 where no edge."""
        lattice = self.lattice_of_node[: self.n_nodes]
        return np.where(self.edge_valid[lattice], self.node_of_lattice[self.lattice_neighbor[lattice]], -1)

    def neighbors(self) -> np.ndarray:
        """[n_max, K] int64 neighbour table: slot 0 = self, -1 = no edge / padding node."""
        table = np.full((self.n_max, self.k), -1, dtype=np.int64)
        n = self.n_nodes
        table[:n, 0] = np.arange(n)
        table[:n, 1 : 1 + self.segment.shape[0]] = self._step_neighbors()
        return table

    def guidepost(self, source: int) -> list[int]:
        """The nodes of the shortest path from ``source`` to the nearest node with utility, in
        travel order, ``source`` excluded; ties go to the lower node index. Empty when no node
        has utility or ``source`` itself has some.

        Dijkstra over the edges (hop lengths in cells) that stops at the first node with utility
        it settles: with positive lengths, that one is the nearest. Plain Python lists, because
        this runs on every step and the graph is small (numpy scalar indexing would triple it).
        """
        n = self.n_nodes
        targets = self._step_neighbors().tolist()
        useful, lengths = (self.utility[:n] > 0).tolist(), self.step_length.tolist()
        distance, parent = [float("inf")] * n, [-1] * n
        distance[source] = 0.0
        heap = [(0.0, source)]
        while heap:
            d, node = heapq.heappop(heap)
            if d > distance[node]:
                continue
            if useful[node]:
                path = []
                while node != source:
                    path.append(node)
                    node = parent[node]
                return path[::-1]
            for step, nxt in enumerate(targets[node]):
                if nxt >= 0 and d + lengths[step] < distance[nxt]:
                    distance[nxt], parent[nxt] = d + lengths[step], node
                    heapq.heappush(heap, (distance[nxt], nxt))
        return []

    def positions(self) -> np.ndarray:
        """[n_nodes, 2] (row, col) of every node."""
        return self.node_rc[: self.n_nodes]

    def slot_length(self, slot: int) -> float:
        """Length in cells of the hop taken through ``slot`` (0 for slot 0, staying put)."""
        return 0.0 if slot == 0 else float(self.step_length[slot - 1])

    def sweep_positions(self, node: int, slot: int) -> np.ndarray:
        """Flat indices of the cells the robot's centre crosses on the hop from ``node`` via ``slot``.

        One cell per unit step along the hop, both ends included, so a hop and its reverse
        sense from the same cells.
        """
        origin = self.lattice_flat[self.lattice_of_node[node]]
        return origin + self._sweep_offset[slot - 1]
