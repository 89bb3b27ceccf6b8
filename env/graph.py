"""The viewpoint graph: nodes over known free space, edges over known-free routes.

Nodes sit at the *sites* of a square lattice of ``spacing`` cells anchored at the robot's start
(:mod:`env.lattice`: the free cell of each lattice point's box nearest the point), so the robot,
which only ever moves from node to node, always stands on a node. A lattice point becomes a node
once an edge reaches it from the robot's component; node indices are given in order of discovery
and never change within an episode. An edge joins a node to each of its 8 lattice neighbours
(only the 4 axis-aligned ones when 5 <= K < 9) along a route fixed per map (a straight segment,
or the shortest path through a door the lattice misses), and exists once every cell of that
route is known free. Because the belief only ever gains known cells and the world is static, a
valid edge stays valid: edges, nodes and indices only grow.

A lattice node cannot always see all of its box: a niche behind the end of a wall, the dead end
of a corridor. When no node sees a frontier while the map is not yet explored, the env asks for
a *lookout* (``add_lookout``): a node at the nearest known-free cell that sees one, joined to one
node through a slot no lattice edge can ever take. Every free cell in sight of a cell that a
known-free path reaches is thus in sight of a node in the end.

Per-node utility (the reference's "observable frontiers") counts the frontier cells within
``utility_range`` whose sight line from the node runs over known-free cells only.

The guidepost is the shortest graph path from the robot's node to the nearest node with utility:
the route a nearest-frontier planner would take. (In large-scale-DRL-exploration at 8aabb0d the
column named ``guidepost`` is the visited flag; docs/reading-guide.md, "Node features".)
"""
from __future__ import annotations

import heapq

import numpy as np

from env.geometry import flat_index, map_cells, sight_table
from env.lattice import LATTICE_STEPS, LatticeGeometry, PathField, hop_length, opposite
from env.sensing import FREE
from env.state_copy import copy_except
from env.state_digest import feed


class ViewpointGraph:
    """Viewpoint graph over a padded, flattened belief map (see the module docstring).

    Slot 0 of every node is the node itself; slot ``1 + d`` is the neighbour one lattice step in
    direction ``env.lattice.LATTICE_STEPS[d]``, or -1 when that edge does not (yet) exist.
    """

    _FIXED_PER_MAP = frozenset({"geometry", "_sight_cells", "_sight_between"})
    """Read-only tables a copy shares: the lattice (``build_lattice`` freezes its arrays) and the
    sight lines (``env.geometry.sight_table``, cached and frozen)."""

    _CONSTANT = frozenset({"height", "width", "stride", "pad", "spacing", "k", "n_max", "utility_range"})
    """Sizes fixed for the map."""
    _READ_BY_OBSERVATION_ONLY = frozenset({"visited"})
    """What the observation reads and no move, reward or end of episode does."""
    _FOLLOWS_FROM_NODES = frozenset({"node_of_lattice"})
    """The inverse of ``lattice_of_node[:n_nodes]``, -1 elsewhere, as long as the largest id in it."""
    _DIGESTED = frozenset({"n_nodes", "lattice_of_node", "node_rc", "utility", "edge_valid", "edge_undecided",
                           "position_flat", "tail_check", "tails", "entries", "hop_length", "lattice_neighbor"})
    """What ``digest`` feeds: every other attribute an episode changes."""

    def digest(self, h) -> None:
        """Feed the hash ``h`` (``env.state_digest``) ``_DIGESTED``: the nodes in their order of
        discovery, their edges, approach and lookout nodes, the hops' lengths, the utilities.
        The node tables only up to ``n_nodes``; the hop lengths and the neighbour table, as large
        as the lattice, by a marker while they are still the lattice's own (only approach and
        lookout nodes change them)."""
        n = self.n_nodes
        for value in (self.lattice_of_node[:n], self.node_rc[:n], self.utility[:n], self.edge_valid,
                      self.edge_undecided, self.position_flat, self.tail_check, self.tails, self.entries):
            feed(h, value)
        for value, lattices in ((self.hop_length, self.geometry.route_length),
                                (self.lattice_neighbor, self.geometry.lattice_neighbor)):
            feed(h, None if np.array_equal(value, lattices) else value)

    def __deepcopy__(self, memo: dict) -> "ViewpointGraph":
        """An independent graph, its nodes, edges and utilities its own, sharing ``_FIXED_PER_MAP``:
        what ``copy.deepcopy`` of an env (``GridExploreEnv.lookahead_copy``) gives its graph."""
        return copy_except(self, self._FIXED_PER_MAP)

    def __init__(self, geometry: LatticeGeometry, *, height: int, width: int,
                 stride: int, spacing: int, k: int, n_max: int, utility_range: int) -> None:
        if k < 5:
            raise ValueError(f"k={k} is too small: the lattice needs 5 slots (self + 4 axis "
                             f"neighbours) or >= 9 (self + 8, diagonals included)")
        self.geometry = lattice = geometry
        self.height, self.width, self.spacing, self.k, self.n_max = height, width, spacing, k, n_max
        n_lattice = lattice.n_lattice
        self.edge_valid = np.zeros(lattice.neighbor[:-1].shape, dtype=bool)
        self.edge_undecided = lattice.neighbor[:-1] < n_lattice

        self.utility_range = utility_range
        self._sight_cells, self._sight_between = sight_table(utility_range, stride)

        self.node_of_lattice = np.full(n_lattice + 1, -1, dtype=np.int64)
        self.lattice_of_node = np.zeros(n_max, dtype=np.int64)
        self.node_rc = np.zeros((n_max, 2), dtype=np.int64)
        self.n_nodes = 0
        self.utility = np.zeros(n_max, dtype=np.int64)
        self.visited = np.zeros(n_max, dtype=bool)

        # Approach nodes (see _open_approaches): a node off its site stands at position_flat and
        # reaches its site along a tail; the edge it was opened through follows its own route.
        self.stride, self.pad = stride, (stride - width) // 2
        self.position_flat = lattice.site_flat.copy()
        self.tail_check = np.append(lattice.site_flat, lattice.site_flat[lattice.start_lattice])[:, None]
        self.tails: dict[int, np.ndarray] = {}  # lattice point -> centre cells, position to site
        self.entries: dict[tuple[int, int], np.ndarray] = {}  # (lattice, step) -> its own sweep
        self.hop_length = lattice.route_length.copy()  # [n_lattice, steps], set anew for rerouted hops
        # Lookout nodes (see _open_lookout) take ids past the lattice's sentinel row, and a slot of
        # the node they are reached from: the graph's own copy of the lattice's neighbour table.
        self.lattice_neighbor = lattice.lattice_neighbor.copy()
        self._add(np.array([lattice.start_lattice]))

    def _add(self, lattice: np.ndarray) -> None:
        total = self.n_nodes + lattice.size
        if not lattice.size:
            return
        if total > self.n_max:
            raise ValueError(
                f"the viewpoint graph has {total} nodes, more than n_max={self.n_max}; raise n_max "
                f"or node_spacing (spacing {self.spacing} on this {self.height}x{self.width} map "
                f"allows up to {self.geometry.n_lattice} nodes)")
        self.node_of_lattice[lattice] = np.arange(self.n_nodes, total)
        self.lattice_of_node[self.n_nodes : total] = lattice
        self.node_rc[self.n_nodes : total] = self.geometry.site_rc[lattice]
        self.n_nodes = total

    def update(self, belief: np.ndarray, frontier: np.ndarray) -> None:
        """Refresh edges, nodes and utilities after the (flat, padded) ``belief`` gained cells.

        ``frontier`` is the flat bool frontier mask of the same padded grid.
        """
        self._grow(belief, self.lattice_of_node[: self.n_nodes])
        self._update_utility(belief, frontier)
        while not self.utility.any() and self._open_approaches(belief, frontier):
            self._update_utility(belief, frontier)

    def _grow(self, belief: np.ndarray, todo: np.ndarray) -> None:
        """Decide the edges of the ``todo`` lattice points, add the nodes they reach, repeat."""
        in_graph = self.node_of_lattice >= 0
        # Edges of nodes outside the graph matter only once the graph reaches them.
        todo = todo[self.edge_undecided[todo].any(axis=1)]
        while todo.size:
            self._decide_edges(belief, todo)
            reach = self.lattice_neighbor[todo][self.edge_valid[todo]]
            todo = np.unique(reach[~in_graph[reach]])
            self._add(todo)
            in_graph[todo] = True

    def _decide_edges(self, belief: np.ndarray, lattice: np.ndarray) -> None:
        """Make valid, for good, the undecided edges of ``lattice`` points whose routes are now
        known free (both directions together). The others wait: a route is free in the true
        map, so it never meets a known obstacle, and an edge without a route is never undecided.
        """
        valid = (belief[self.geometry.route_check[lattice]] == FREE).all(axis=2)  # [m, steps]
        valid &= self.edge_undecided[lattice]
        if self.tails:  # an approach node's tail must be known free too, at either end
            valid &= (belief[self.tail_check[lattice]] == FREE).all(axis=1)[:, None]
            valid &= (belief[self.tail_check[self.geometry.neighbor[lattice]]] == FREE).all(axis=2)
        rows, steps = np.nonzero(valid)
        ends = (lattice[rows], self.geometry.neighbor[lattice[rows], steps])
        for end, step in ((ends[0], steps), (ends[1], opposite(steps))):
            self.edge_undecided[end, step] = False
            self.edge_valid[end, step] = True
        if self.tails:  # a hop through a tail is measured on its own cells
            for point, far, step in zip(ends[0].tolist(), ends[1].tolist(), steps.tolist()):
                if point in self.tails or far in self.tails:
                    self.hop_length[point, step] = self.hop_length[far, opposite(step)] = self._measure(point, step)

    def _update_utility(self, belief: np.ndarray, frontier: np.ndarray) -> None:
        self.utility[:] = 0
        origin = self.position_flat[self.lattice_of_node[: self.n_nodes]]
        self.utility[: self.n_nodes] = self._utility_at(origin, belief, frontier)

    def _utility_at(self, origin: np.ndarray, belief: np.ndarray, frontier: np.ndarray) -> np.ndarray:
        """[P] frontier cells within ``utility_range`` in clear sight of each flat cell ``origin``."""
        # Frontier cells in each origin's utility disc first (cheap), sight lines only for those.
        node, cell = np.nonzero(frontier[origin[:, None] + self._sight_cells])
        between = belief[origin[node, None] + self._sight_between[cell]]
        clear = (between == FREE).all(axis=1)
        return np.bincount(node[clear], minlength=len(origin))

    def _step_neighbors(self) -> np.ndarray:
        """[n_nodes, steps] the node one lattice step away in each direction, -1 where no edge."""
        lattice = self.lattice_of_node[: self.n_nodes]
        return np.where(self.edge_valid[lattice], self.node_of_lattice[self.lattice_neighbor[lattice]], -1)

    def neighbors(self) -> np.ndarray:
        """[n_max, K] int64 neighbour table: slot 0 = self, -1 = no edge / padding node."""
        table = np.full((self.n_max, self.k), -1, dtype=np.int64)
        n = self.n_nodes
        table[:n, 0] = np.arange(n)
        table[:n, 1 : 1 + self.edge_valid.shape[1]] = self._step_neighbors()
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
        lengths = self.hop_length[self.lattice_of_node[:n]].tolist()
        useful = (self.utility[:n] > 0).tolist()
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
            for nxt, length in zip(targets[node], lengths[node]):
                if nxt >= 0 and d + length < distance[nxt]:
                    distance[nxt], parent[nxt] = d + length, node
                    heapq.heappush(heap, (distance[nxt], nxt))
        return []

    def positions(self) -> np.ndarray:
        """[n_nodes, 2] (row, col) of every node."""
        return self.node_rc[: self.n_nodes]

    def slot_length(self, node: int, slot: int) -> float:
        """Length in cells of the hop from ``node`` through ``slot`` (0 for slot 0, staying put),
        as :func:`env.lattice.hop_length` measures its route."""
        return 0.0 if slot == 0 else float(self.hop_length[self.lattice_of_node[node], slot - 1])

    def sweep_positions(self, node: int, slot: int) -> np.ndarray:
        """Flat indices of the cells the robot's centre crosses on the hop from ``node`` via ``slot``.

        One cell per unit step along the hop's route, both ends included; a hop and its reverse
        sense from the same cells.
        """
        return self._route(int(self.lattice_of_node[node]), slot - 1)

    def _route(self, point: int, step: int) -> np.ndarray:
        """The centre cells of the hop from lattice point ``point`` in direction ``step``: the route
        it was opened along, or its lattice route with the tails of approach nodes at its ends."""
        if (point, step) in self.entries:
            return self.entries[point, step]
        far = int(self.geometry.neighbor[point, step])
        route = self.geometry.sweeps[point, step]
        out, back = self.tails.get(point), self.tails.get(far)
        parts = ([out[:-1]] if out is not None else []) + [route] + ([back[::-1][1:]] if back is not None else [])
        return np.concatenate(parts) if len(parts) > 1 else route

    def _measure(self, point: int, step: int) -> float:
        return hop_length(self.geometry.occupied, map_cells(self._route(point, step), self.pad, self.stride))

    def _open_approaches(self, belief: np.ndarray, frontier: np.ndarray) -> bool:
        """When no node sees a frontier: add a node for each lattice neighbour of the graph that
        has none, at the known-free cell nearest its lattice point among those that a known-free
        path from a neighbouring node reaches inside the two lattice points' boxes, that lie
        nearer the lattice point than that node and that see a frontier cell (so the new node has
        utility). A cell holds one node: where two lattice points would take the same cell, the one
        nearer it does and the other takes its next such cell, if any. Returns whether any was added.

        A narrow passage that no lattice route can yet be seen through (a door off the lattice,
        behind a thick wall) is then entered step by step: the new node stands in or beyond it
        and sees what is past. Its node joins its other neighbours through a *tail*, the path
        from where it stands to its site (:mod:`env.lattice`), which counts towards their routes.
        Only the belief decides where such a node goes; its tail is found in the true map and,
        like every route, must be known free before an edge uses it.
        """
        geometry, p = self.geometry, self.pad
        blocked = (belief.reshape(-1, self.stride) != FREE)[p : p + self.height, p : p + self.width]
        # Every (node, lattice neighbour without a node) pair with a frontier cell within sight
        # range of their two boxes, searched together.
        points = self.lattice_of_node[: self.n_nodes]
        others = self.lattice_neighbor[points]  # [n, steps]
        node, step = np.nonzero((others < geometry.n_lattice) & (self.node_of_lattice[others] < 0))  # [pairs]
        if not node.size:
            return False
        pairs = np.stack([points[node], others[node, step]], axis=1)
        low, high = geometry.box_pairs(pairs)
        seen = map_cells(np.flatnonzero(frontier), p, self.stride)  # [F, 2]
        near = ((seen[None] >= low[:, None] - self.utility_range) & (seen[None] <= high[:, None] + self.utility_range)).all(axis=2).any(axis=1)
        node, step, pairs, low, high = node[near], step[near], pairs[near], low[near], high[near]
        if not node.size:
            return False
        field = PathField(blocked, self.node_rc[node], low, high)
        useful: dict[int, list[tuple]] = {}  # lattice point -> [(gap, cell, pair)]: cells that would serve it
        for i, (point, other) in enumerate(pairs.tolist()):
            here, goal = tuple(self.node_rc[node[i]].tolist()), geometry.lattice_rc[other].tolist()
            gap = lambda c: (c[0] - goal[0]) ** 2 + (c[1] - goal[1]) ** 2  # noqa: E731
            cells = [c for c in field.reached(i) if gap(c) < gap(here)]
            sees = self._utility_at(flat_index(np.array(cells, dtype=np.int64).reshape(-1, 2), p, self.stride),
                                    belief, frontier)
            useful.setdefault(other, []).extend((gap(c), c, i) for c, u in zip(cells, sees) if u)
        # Each lattice point its nearest useful cell, one node a cell, the points nearest a cell choosing
        # first (two nodes on one cell were joined by a hop that ended where it started:
        # tests/env/test_env.py's @example). No node stands on a useful cell: none sees a frontier.
        taken: set[tuple[int, int]] = set()
        chosen: dict[int, tuple] = {}  # lattice point -> (gap, cell, pair)
        ranked = sorted((sorted(options), other) for other, options in useful.items() if options)
        for options, other in ranked:
            free = next((option for option in options if option[1] not in taken), None)
            if free is not None:
                chosen[other] = free
                taken.add(free[1])
        best = {other: chosen[other] for other in useful if other in chosen}  # nodes numbered in pair order
        for other, (_, cell, i) in best.items():
            self._add_approach(int(pairs[i, 0]), int(step[i]), other, cell, field.route(i, cell))
        if best:
            self._grow(belief, np.array(list(best)))
        return bool(best)

    def add_lookout(self, belief: np.ndarray, frontier: np.ndarray) -> bool:
        """When no node sees a frontier (after ``update``): add one *lookout*, a node at the
        known-free cell nearest a node (along a known-free path, within ``2 spacing +
        utility_range`` cells of it on each axis) that sees a frontier cell, joined to that node
        alone through one of its spare slots. Returns whether one was added.

        Lattice nodes miss a pocket in a box whose node cannot see into it while every lattice
        neighbour already has its node (a niche behind the end of a wall, the dead end of a
        corridor): no lattice point is left to place a node for it. A lookout is a dead end the
        robot walks into and out of again. A *spare* slot is a direction that no edge can ever
        take: no lattice point beyond it (the map's edge), or a lattice neighbour that has its node
        but no route to this one; a lookout's own slots other than the way back are spare, so a
        deeper pocket gets a lookout from a lookout. The graph holds at most ``n_max`` nodes: with
        no room left it stays as it is. The env calls this only while its episode would otherwise
        end short of exploring the map (``env.grid_explore``).
        """
        if self.n_nodes >= self.n_max:
            return False
        p = self.pad
        seen = map_cells(np.flatnonzero(frontier), p, self.stride)  # [F, 2]
        reach = 2 * self.spacing + self.utility_range
        node_rc = self.node_rc[: self.n_nodes]
        near = (np.abs(node_rc[:, None] - seen[None]).max(axis=2) <= reach).any(axis=1)  # [n]
        spare = self._spare_slots(self.lattice_of_node[: self.n_nodes])  # [n, steps]
        node = np.flatnonzero(near & spare.any(axis=1))
        if not node.size:
            return False
        blocked = (belief.reshape(-1, self.stride) != FREE)[p : p + self.height, p : p + self.width]
        corner = np.array([self.height - 1, self.width - 1])
        field = PathField(blocked, node_rc[node], np.maximum(node_rc[node] - reach, 0),
                          np.minimum(node_rc[node] + reach, corner))
        best = None  # (path length, i, cell)
        for i in range(node.size):
            cells = np.array(field.reached(i), dtype=np.int64).reshape(-1, 2)
            cells = cells[(np.abs(cells[:, None] - seen[None]).max(axis=2) <= self.utility_range).any(axis=1)]
            sees = self._utility_at(flat_index(cells, p, self.stride), belief, frontier) > 0
            for cell, length in zip(cells[sees].tolist(), field.lengths(i, cells[sees]).tolist()):
                best = min(best or (length, i, cell), (length, i, cell))
        if best is None:
            return False
        _, i, cell = best
        self._add_lookout(int(node[i]), spare[node[i]], cell, field.route(i, tuple(cell))[1])
        self._update_utility(belief, frontier)
        return True

    def _spare_slots(self, points: np.ndarray) -> np.ndarray:
        """[n, steps] bool: the directions of lattice points (or lookouts) ``points`` that no edge
        can ever take (see ``add_lookout``)."""
        n_lattice = self.geometry.n_lattice
        beyond = self.lattice_neighbor[points]  # [n, steps]
        spare = beyond == n_lattice
        real = points < n_lattice
        no_route = self.geometry.neighbor[points[real]] == n_lattice
        spare[real] |= no_route & (self.node_of_lattice[beyond[real]] >= 0)
        return spare & ~self.edge_valid[points]

    def _add_lookout(self, node: int, spare: np.ndarray, cell: list[int], centre: np.ndarray) -> None:
        """Lookout node at ``cell`` joined to ``node`` along the ``centre`` cells of its route, through
        the spare direction (``spare`` [steps]) nearest to the way it goes."""
        point = int(self.lattice_of_node[node])
        steps = np.array(LATTICE_STEPS[: spare.size], dtype=float)
        heading = (steps @ (np.array(cell) - self.node_rc[node])) / np.hypot(*steps.T)
        step = int(np.argmax(np.where(spare, heading, -np.inf)))
        back, lookout = opposite(step), len(self.node_of_lattice)
        self._room_for(lookout + 1)
        self.node_of_lattice[lookout], self.lattice_of_node[self.n_nodes] = self.n_nodes, lookout
        self.node_rc[self.n_nodes] = cell
        self.n_nodes += 1
        self.position_flat[lookout] = flat_index(np.array(cell), self.pad, self.stride)
        self.lattice_neighbor[point, step], self.lattice_neighbor[lookout, back] = lookout, point
        self.edge_valid[point, step] = self.edge_valid[lookout, back] = True
        sweep = flat_index(centre, self.pad, self.stride)
        self.entries[point, step], self.entries[lookout, back] = sweep, sweep[::-1].copy()
        self.hop_length[point, step] = self.hop_length[lookout, back] = hop_length(self.geometry.occupied, centre)

    def _room_for(self, ids: int) -> None:
        """Grow the arrays indexed by lattice point to hold ids ``0 .. ids - 1`` (lookouts' ids
        follow the lattice's sentinel ``n_lattice``, whose row in them is never used)."""
        def grown(array: np.ndarray, fill) -> np.ndarray:
            extra = np.full((ids - len(array), *array.shape[1:]), fill, dtype=array.dtype)
            return np.concatenate([array, extra])

        self.node_of_lattice = grown(self.node_of_lattice, -1)
        self.edge_valid, self.edge_undecided = grown(self.edge_valid, False), grown(self.edge_undecided, False)
        self.hop_length, self.position_flat = grown(self.hop_length, 0.0), grown(self.position_flat, 0)
        self.lattice_neighbor = grown(self.lattice_neighbor, self.geometry.n_lattice)

    def _add_approach(self, point: int, step: int, other: int, cell: tuple[int, int], route) -> None:
        """Node for lattice point ``other`` at ``cell``, joined to ``point`` along ``route``."""
        geometry = self.geometry

        def flat(rc) -> np.ndarray:
            return flat_index(rc, self.pad, self.stride)

        self._add(np.array([other]))
        self.node_rc[self.node_of_lattice[other]] = cell
        self.position_flat[other] = flat(cell)
        centre = route[1]
        sweep, back = flat(centre), opposite(step)
        self.entries[point, step], self.entries[other, back] = sweep, sweep[::-1].copy()
        self.hop_length[point, step] = self.hop_length[other, back] = hop_length(geometry.occupied, centre)
        for end, direction in ((point, step), (other, back)):
            self.edge_valid[end, direction], self.edge_undecided[end, direction] = True, False
        site = tuple(geometry.site_rc[other].tolist())
        tail = None
        if geometry.has_site[other]:
            region = geometry.box_pairs(np.array([[point, other]]))
            tail = PathField(geometry.occupied, np.array([cell]), *region).route(0, site)
        if tail is None:  # no way on from here: this node only looks (and is only entered as it was)
            self.edge_undecided[other] = False
            beside = geometry.lattice_neighbor[other]
            inside = beside < geometry.n_lattice
            self.edge_undecided[beside[inside], opposite(np.flatnonzero(inside))] = False
            return
        check, centre, _ = tail
        check = flat(check)
        if len(check) > self.tail_check.shape[1]:
            self.tail_check = np.concatenate(
                [self.tail_check, np.repeat(self.tail_check[:, -1:], len(check) - self.tail_check.shape[1], axis=1)], axis=1)
        self.tail_check[other] = check[0]
        self.tail_check[other, : len(check)] = check
        self.tails[other] = flat(centre)

