"""Where the viewpoint graph's nodes sit and which routes its edges take: fixed per map.

The lattice has a point every ``spacing`` cells, anchored at the robot's start. Each lattice
point owns the ``spacing x spacing`` box of cells nearest to it (offsets ``-(s-1)//2 .. s//2`` on
each axis; the outermost rows and columns of boxes reach the map's edge, so the boxes tile the
map) and its node, its *site*, is the free cell of that box nearest the lattice point
(Euclidean; ties to the lower row, then column): the lattice point itself where it is free, else
a cell beside it, so a corridor or a room that no lattice point falls in still gets nodes. A box
with no free cell has no node.

An edge joins the sites of two lattice neighbours (8 directions, or the 4 axis-aligned ones).
Its route is the straight segment between them when every cell that segment covers is free;
otherwise the shortest 8-connected path between them over free cells inside the bounding box
of the two boxes (a diagonal move only where both cells beside it are free, so the robot never
slips between two obstacles that share a corner). A door at any offset from the lattice, one
cell wide or more, is on such a path for some pair of neighbours on either side of it. A pair
with neither has no edge, ever.

Everything here depends on the true map only; the graph (:mod:`env.graph`) lets an edge exist
once every cell of its route is *known* free, so the robot never moves through unknown space.
The bent routes found are kept per box (``bent_routes``), for the next lattice built over the
same cells.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from env.geometry import flat_index, line_cells

# Lattice steps: the 4 axis-aligned ones, then the 4 diagonals; within each group of four the
# opposite of step d is d + 2 (mod 4), which keeps every edge usable in both directions.
LATTICE_STEPS = ((-1, 0), (0, 1), (1, 0), (0, -1), (-1, 1), (1, 1), (1, -1), (-1, -1))
_FORWARD = (1, 2, 5, 6)  # right, down, down-right, down-left: each unordered pair once
_DIAGONAL = math.sqrt(2)


def opposite(step: int) -> int:
    return step // 4 * 4 + (step + 2) % 4


@dataclass(frozen=True)
class LatticeGeometry:
    """Sites and edge routes of one map's lattice, as flat indices into the padded grid.

    ``n_lattice`` lattice points, ``n_steps`` (4 or 8) directions; arrays indexed
    ``[lattice point, direction]`` describe the edge towards the neighbour in that direction.
    """

    occupied: np.ndarray
    """[H, W] the true map the sites and routes were found in."""
    lattice_shape: tuple[int, int]
    """(rows, cols) of lattice points."""
    lattice_rc: np.ndarray
    """[n_lattice, 2] (row, col) of each lattice point."""
    spacing: int
    start_lattice: int
    """The lattice point at the start cell (which is its own site)."""
    site_rc: np.ndarray
    """[n_lattice, 2] (row, col) of each lattice point's site (the lattice point where no site)."""
    has_site: np.ndarray
    """[n_lattice] bool: the lattice point's box has a free cell."""
    site_flat: np.ndarray
    """[n_lattice] flat padded index of each site."""
    lattice_neighbor: np.ndarray
    """[n_lattice, n_steps] the lattice neighbour in each direction, ``n_lattice`` off the lattice."""
    neighbor: np.ndarray
    """[n_lattice + 1, n_steps] as ``lattice_neighbor``, but ``n_lattice`` (a sentinel row whose
    node is always -1) also where no route joins the two sites."""
    route_check: np.ndarray
    """[n_lattice, n_steps, L] flat indices of the cells that must be known free for the edge to
    exist (the segment's covered cells, or the path's cells and the corners of its diagonal moves),
    padded with the site itself."""
    route_length: np.ndarray
    """[n_lattice, n_steps] travel in cells along the route (0 where there is no route)."""
    sweeps: dict[tuple[int, int], np.ndarray]
    """(lattice point, direction) -> [M] flat indices of the cells the robot's centre crosses
    along the route, one per unit step, both ends included."""

    @property
    def n_lattice(self) -> int:
        return len(self.site_rc)

    def box_pairs(self, pairs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """[P, 2] (low, high) inclusive (row, col) corners of the bounding box of each pair of
        lattice points' boxes ([P, 2] lattice indices), clipped to the map: the region an edge's
        route (or a tail) stays in."""
        return _box(self.lattice_rc[pairs], self.spacing, self.occupied.shape)


def n_steps_for(k: int) -> int:
    """Lattice directions a node has with ``k`` neighbour slots: 8 from K = 9, else the 4 axis ones."""
    return 8 if k >= 9 else 4


def build_lattice(occupied: np.ndarray, start: tuple[int, int], spacing: int, n_steps: int,
                  pad: int) -> LatticeGeometry:
    """The lattice of ``occupied`` ([H, W] bool true map) anchored at ``start``, for a grid padded
    by ``pad`` cells on every side (see the module docstring)."""
    height, width = occupied.shape
    stride = width + 2 * pad
    rows = np.arange(start[0] % spacing, height, spacing)
    cols = np.arange(start[1] % spacing, width, spacing)
    rr, cc = np.meshgrid(rows, cols, indexing="ij")
    lattice_rc = np.stack([rr.ravel(), cc.ravel()], axis=1)
    site_rc, has_site = _sites(occupied, lattice_rc, spacing)
    site_flat = flat_index(site_rc, pad, stride)

    n_lattice = len(lattice_rc)
    steps = np.array(LATTICE_STEPS[:n_steps])
    li, lj = np.divmod(np.arange(n_lattice), len(cols))
    ni, nj = li[:, None] + steps[:, 0], lj[:, None] + steps[:, 1]
    inside = (ni >= 0) & (ni < len(rows)) & (nj >= 0) & (nj < len(cols))
    neighbor = np.full((n_lattice + 1, n_steps), n_lattice, dtype=np.int64)
    candidate = np.where(inside, ni * len(cols) + nj, n_lattice)

    def flat(rc: np.ndarray) -> np.ndarray:
        return flat_index(rc, pad, stride)

    # Routes in batches (pairs p -> q in one direction, their cells as flat indices):
    # (p [g], step, cells to check [g, L], centre cells [g, M], lengths [g]).
    batches, bent = [], []
    for step in (d for d in _FORWARD if d < n_steps):
        ps = np.flatnonzero(inside[:, step] & has_site & np.append(has_site, False)[candidate[:, step]])
        offsets = site_rc[candidate[ps, step]] - site_rc[ps]
        # Pairs whose sites are the same offset apart share one segment: test them together.
        for offset in np.unique(offsets, axis=0):
            group = ps[(offsets == offset).all(axis=1)]
            covered, centre, length = _segment(int(offset[0]), int(offset[1]))
            cells = site_rc[group, None] + covered  # [g, covered cells, 2]
            clear = ~occupied[cells[..., 0], cells[..., 1]].any(axis=1)
            if clear.any():
                batches.append((group[clear], step, flat(cells[clear]), flat(site_rc[group[clear], None] + centre),
                                np.full(int(clear.sum()), length)))
            bent += [(p, step, int(candidate[p, step])) for p in group[~clear].tolist()]
    if bent:  # walls between the two sites: the shortest path around
        ends = np.array([(p, q) for p, _, q in bent])
        for (p, step, _), route in zip(bent, bent_routes(occupied, site_rc[ends], *_box(lattice_rc[ends], spacing,
                                                                                        occupied.shape))):
            if route is not None:
                batches.append((np.array([p]), step, flat(route[0])[None], flat(route[1])[None], np.array([route[2]])))

    lengths = np.zeros((n_lattice, n_steps))
    width = max((batch[2].shape[1] for batch in batches), default=1)
    route_check = np.repeat(site_flat[:, None, None], n_steps, axis=1).repeat(width, axis=2)  # padded with the site
    sweeps: dict[tuple[int, int], np.ndarray] = {}
    for ps, step, check, centre, length in batches:
        qs, back = candidate[ps, step], opposite(step)
        neighbor[ps, step], neighbor[qs, back] = qs, ps
        lengths[ps, step] = lengths[qs, back] = length
        route_check[ps, step, : check.shape[1]] = route_check[qs, back, : check.shape[1]] = check
        centre.flags.writeable = False
        for p, q, cells in zip(ps.tolist(), qs.tolist(), centre):
            sweeps[p, step], sweeps[q, back] = cells, cells[::-1]
    for array in (lattice_rc, site_rc, has_site, site_flat, candidate, neighbor, route_check, lengths):
        array.flags.writeable = False
    start_lattice = start[0] // spacing * len(cols) + start[1] // spacing
    return LatticeGeometry(occupied, (len(rows), len(cols)), lattice_rc, spacing, start_lattice, site_rc,
                           has_site, site_flat, candidate, neighbor, route_check, lengths, sweeps)


_BENT_ROUTES: dict[tuple, tuple | None] = {}
"""Routes ``bent_routes`` has found, keyed by all that one depends on: its two ends and the cells
of the box it is searched in. A planner builds a lattice of a guessed world at every move
(``planner.worlds.imagined_world``), and most boxes are as they were the move before."""
BENT_ROUTES_KEPT = 4096
"""How many routes ``_BENT_ROUTES`` keeps; past that the oldest go first."""


def bent_routes(occupied: np.ndarray, ends: np.ndarray, low: np.ndarray, high: np.ndarray) -> list[tuple | None]:
    """For each pair of cells ``ends`` [P, 2, 2], the ``PathField.route`` from the first to the
    second inside the box ``low`` - ``high`` [P, 2] (inclusive corners) over the free cells of
    ``occupied``, or None where there is none. Routes found before in the same cells come from
    ``_BENT_ROUTES``; the others are searched together, in one ``PathField``."""
    low, high = np.minimum(low, ends[:, 0]), np.maximum(high, ends[:, 0])  # as PathField grows a box
    keys = [(first, second, box_low, box_high,
             occupied[box_low[0] : box_high[0] + 1, box_low[1] : box_high[1] + 1].tobytes())
            for first, second, box_low, box_high in zip(map(tuple, ends[:, 0].tolist()), map(tuple, ends[:, 1].tolist()),
                                                        map(tuple, low.tolist()), map(tuple, high.tolist()))]
    missing = [i for i, key in enumerate(keys) if key not in _BENT_ROUTES]
    if missing:
        field = PathField(occupied, ends[missing, 0], low[missing], high[missing])
        for j, i in enumerate(missing):
            route = field.route(j, keys[i][1])
            if route is not None:
                for array in route[:2]:
                    array.flags.writeable = False
            _BENT_ROUTES[keys[i]] = route
    routes = [_BENT_ROUTES[key] for key in keys]
    while len(_BENT_ROUTES) > BENT_ROUTES_KEPT:
        del _BENT_ROUTES[next(iter(_BENT_ROUTES))]
    return routes


def _own_box(points: np.ndarray, spacing: int, shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """Inclusive (row, col) corners of each lattice point's box ([..., 2] points): offsets
    ``-(s-1)//2 .. s//2``, except that the outermost lattice rows and columns reach the map's
    edge, so that every cell of the map lies in exactly one box."""
    limit = np.array(shape) - 1
    low = np.where(points - spacing < 0, 0, points - (spacing - 1) // 2)
    high = np.where(points + spacing > limit, limit, points + spacing // 2)
    return low, high


def _box(points: np.ndarray, spacing: int, shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """Corners of the bounding box of the boxes of [..., K, 2] lattice points (over K)."""
    low, high = _own_box(points, spacing, shape)
    return low.min(axis=-2), high.max(axis=-2)


@lru_cache(maxsize=64)
def _search_offsets(spacing: int) -> np.ndarray:
    """[C, 2] (row, col) offsets from a lattice point to the cells its box may hold (an edge box's
    reach), nearest first (Euclidean; ties to the lower row, then column)."""
    span = np.arange(-spacing - (spacing - 1) // 2, spacing + spacing // 2 + 1)
    dr, dc = np.meshgrid(span, span, indexing="ij")
    offsets = np.stack([dr.ravel(), dc.ravel()], axis=1)
    offsets = offsets[np.lexsort((offsets[:, 1], offsets[:, 0], (offsets**2).sum(axis=1)))]
    offsets.flags.writeable = False
    return offsets


def _box_cells(lattice_rc: np.ndarray, spacing: int, shape: tuple[int, int]
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """[n, C] rows and [n, C] columns of the candidate cells around each lattice point, nearest
    first (``_search_offsets``), and [n, C] whether each lies in the point's own box: the order
    in which a site is looked for."""
    offsets = _search_offsets(spacing)
    rows, cols = lattice_rc[:, 0, None] + offsets[:, 0], lattice_rc[:, 1, None] + offsets[:, 1]
    low, high = _own_box(lattice_rc, spacing, shape)
    inside = ((rows >= low[:, 0, None]) & (rows <= high[:, 0, None])
              & (cols >= low[:, 1, None]) & (cols <= high[:, 1, None]))
    return rows, cols, inside


def _sites(occupied: np.ndarray, lattice_rc: np.ndarray, spacing: int) -> tuple[np.ndarray, np.ndarray]:
    """Each lattice point's site (the free cell of its box nearest to it) and whether it has one."""
    rows, cols, inside = _box_cells(lattice_rc, spacing, occupied.shape)
    height, width = occupied.shape
    free = inside & ~occupied[np.clip(rows, 0, height - 1), np.clip(cols, 0, width - 1)]
    has_site = free.any(axis=1)
    first = free.argmax(axis=1)[:, None]
    found = np.concatenate([np.take_along_axis(rows, first, 1), np.take_along_axis(cols, first, 1)], axis=1)
    site_rc = np.where(has_site[:, None], found, lattice_rc)
    return site_rc, has_site


def lattice_point_of(lattice: LatticeGeometry, cell: tuple[int, int]) -> int:
    """The lattice point whose box holds the map cell ``cell`` (row, col): boxes tile the map."""
    rows, cols = lattice.lattice_shape
    s = lattice.spacing
    first = lattice.lattice_rc[0]
    i = min(max((cell[0] - int(first[0]) + (s - 1) // 2) // s, 0), rows - 1)
    j = min(max((cell[1] - int(first[1]) + (s - 1) // 2) // s, 0), cols - 1)
    return i * cols + j


def cells_before_sites(lattice_rc: np.ndarray, site_rc: np.ndarray, spacing: int, shape: tuple[int, int]
                       ) -> np.ndarray:
    """[m, 2] (row, col) of the cells of the given points' boxes that come before each point's
    site in the search order: occupied, for the site is the first free cell. Knowing a node's
    position therefore tells these cells, which a map guessed around the graph must respect
    (``planner.worlds.imagined_world``)."""
    rows, cols, inside = _box_cells(lattice_rc, spacing, shape)
    at_site = (rows == site_rc[:, 0, None]) & (cols == site_rc[:, 1, None])
    before = inside & (np.cumsum(at_site, axis=1) == 0)
    return np.stack([rows[before], cols[before]], axis=1)


@lru_cache(maxsize=1024)
def _segment(d_row: int, d_col: int) -> tuple[np.ndarray, np.ndarray, float]:
    """(covered cells, centre cells, length) of the segment from (0, 0) to (d_row, d_col).

    The centres are one cell per unit step along the longer axis, rounded half away from zero:
    exactly the lattice cells on an axis-aligned or diagonal hop.
    """
    n = max(abs(d_row), abs(d_col))
    t = np.arange(n + 1)
    centre = np.stack([_round_ratio(t * d_row, n), _round_ratio(t * d_col, n)], axis=1)
    centre.flags.writeable = False
    return line_cells(d_row, d_col), centre, math.hypot(d_row, d_col)


def _straight_route(occupied: np.ndarray, a: tuple[int, int], b: tuple[int, int]):
    """(covered cells, centre cells, length) of the segment a -> b, or None if it covers a wall."""
    covered, centre, length = _segment(b[0] - a[0], b[1] - a[1])
    covered = np.asarray(a) + covered
    if occupied[covered[:, 0], covered[:, 1]].any():
        return None
    return covered, np.asarray(a) + centre, length


def hop_length(occupied: np.ndarray, centre: np.ndarray) -> float:
    """Travel along a route crossing the ``centre`` cells ([M, 2] (row, col)): the straight
    distance between its ends when it is their straight segment (its cells are that segment's
    centre cells, from either end, and the segment covers no wall), else the sum of its unit and
    diagonal steps."""
    a, b = tuple(centre[0]), tuple(centre[-1])
    straight = _straight_route(occupied, a, b)
    if straight is not None and (np.array_equal(straight[1], centre)
                                 or np.array_equal(_straight_route(occupied, b, a)[1][::-1], centre)):
        return straight[2]
    return float(np.hypot(*np.diff(centre, axis=0).T).sum())


def _round_ratio(numerator: np.ndarray, denominator: int) -> np.ndarray:
    if denominator == 0:
        return np.zeros_like(numerator)
    return np.sign(numerator) * ((2 * np.abs(numerator) + denominator) // (2 * denominator))


class PathField:
    """Shortest 8-connected paths from one source cell per box, for many boxes at once.

    Box i is [low[i], high[i]] (inclusive (row, col) corners, grown to hold ``sources[i]``); a
    path moves over its cells that are not ``blocked`` ([H, W] bool), diagonally only where both
    cells beside the move are open, so it never slips between two walls that share a corner. The
    distances come from relaxing every box together (Bellman-Ford over the 8 moves, as many rounds
    as the longest path has moves): one numpy pass for all the pairs a map's walls separate.
    """

    _MOVES = ((-1, 0, 1.0), (1, 0, 1.0), (0, -1, 1.0), (0, 1, 1.0),
              (-1, -1, math.sqrt(2)), (-1, 1, math.sqrt(2)), (1, -1, math.sqrt(2)), (1, 1, math.sqrt(2)))

    def __init__(self, blocked: np.ndarray, sources: np.ndarray, low: np.ndarray, high: np.ndarray) -> None:
        self.low = np.minimum(low, sources)
        high = np.maximum(high, sources)
        size = int((high - self.low).max()) + 1
        span = np.arange(size)
        rows, cols = self.low[:, 0, None] + span, self.low[:, 1, None] + span  # [P, size]
        inside = (rows[:, :, None] <= high[:, 0, None, None]) & (cols[:, None, :] <= high[:, 1, None, None])
        height, width = blocked.shape
        free = ~blocked[np.minimum(rows, height - 1)[:, :, None], np.minimum(cols, width - 1)[:, None, :]]
        # One closed cell of margin all round: a move's source cell is then a view of the array.
        self.open = np.pad(inside & free, ((0, 0), (1, 1), (1, 1)))
        self.allowed = []  # [P, size, size] per move: a step may end in the (inner) cell
        inner = self.open[:, 1:-1, 1:-1]
        for dr, dc, _ in self._MOVES:
            ok = inner & self._back(self.open, dr, dc)
            if dr and dc:
                ok &= self._back(self.open, 0, dc) & self._back(self.open, dr, 0)
            self.allowed.append(ok)
        self.distance = np.full(self.open.shape, math.inf)
        first = sources - self.low + 1
        self.distance[np.arange(len(sources)), first[:, 0], first[:, 1]] = 0.0
        while True:
            best = self.distance[:, 1:-1, 1:-1].copy()
            for (dr, dc, cost), ok in zip(self._MOVES, self.allowed):
                np.minimum(best, np.where(ok, self._back(self.distance, dr, dc) + cost, math.inf), out=best)
            if not (best < self.distance[:, 1:-1, 1:-1] - 1e-9).any():
                break
            self.distance[:, 1:-1, 1:-1] = best

    @staticmethod
    def _back(array: np.ndarray, dr: int, dc: int) -> np.ndarray:
        """For every inner cell x of the margined ``array``, its value at x - (dr, dc) (a view)."""
        n_rows, n_cols = array.shape[1:]
        return array[:, 1 - dr : n_rows - 1 - dr, 1 - dc : n_cols - 1 - dc]

    def reached(self, i: int) -> list[tuple[int, int]]:
        """The (row, col) cells box ``i``'s source reaches."""
        rows, cols = np.nonzero(np.isfinite(self.distance[i]))
        return list(zip((rows - 1 + self.low[i, 0]).tolist(), (cols - 1 + self.low[i, 1]).tolist()))

    def lengths(self, i: int, cells: np.ndarray) -> np.ndarray:
        """[m] shortest path lengths in box ``i`` to ``cells`` ([m, 2] (row, col) it reaches)."""
        return self.distance[i, cells[:, 0] - self.low[i, 0] + 1, cells[:, 1] - self.low[i, 1] + 1]

    def route(self, i: int, target: tuple[int, int]):
        """(cells to check, centre cells, length) of a shortest path in box ``i`` to ``target``,
        or None where it cannot be reached: the path's cells plus the corners its diagonal moves
        pass. Traced back from the target, each step to the first move (in ``_MOVES`` order) that
        the distances say a shortest path can come from."""
        r, c = target[0] - self.low[i, 0] + 1, target[1] - self.low[i, 1] + 1
        distance = self.distance[i]
        if not (0 <= r < distance.shape[0] and 0 <= c < distance.shape[1]) or not np.isfinite(distance[r, c]):
            return None
        length = float(distance[r, c])
        centre, corners = [(r, c)], []
        while distance[r, c] > 0:
            for (dr, dc, cost), ok in zip(self._MOVES, self.allowed):
                if ok[i, r - 1, c - 1] and abs(distance[r - dr, c - dc] + cost - distance[r, c]) < 1e-9:
                    if dr and dc:
                        corners += [(r - dr, c), (r, c - dc)]
                    r, c = r - dr, c - dc
                    centre.append((r, c))
                    break
        offset = self.low[i] - 1
        centre_rc = np.array(centre[::-1]) + offset
        return np.concatenate([centre_rc, np.array(corners, dtype=np.int64).reshape(-1, 2) + offset]), centre_rc, length
