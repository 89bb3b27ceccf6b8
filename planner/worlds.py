"""The planner's world copies: an env set in what the robot knows, or in a guess of the rest.

Both are copies of a ``GridExploreEnv`` (``GridExploreEnv.lookahead_copy`` shares what an episode
never changes) whose world is replaced, so a lookahead played in them knows nothing the robot does
not: ``belief_world`` (every unknown cell a wall) and ``imagined_world`` (unknown cells as a map
predictor guesses them, with a lattice and graph built from that world alone).
"""
from __future__ import annotations

import copy

import numpy as np

from env.grid_explore import GridExploreEnv
from env.lattice import cells_before_sites
from env.maps import GridMap
from env.sensing import FREE, OCCUPIED, UNKNOWN


def belief_world(env: GridExploreEnv) -> GridExploreEnv:
    """A deep copy in which the world is ``env``'s belief, every unknown cell an obstacle:
    what the robot knows and nothing more, so a planner may look ahead in it honestly.

    Stepping the copy reveals only walls where ``env`` has unknown cells, so its frontiers
    close as the sensor passes them and its episode ends once every current frontier has been
    looked at: its travel is the cost of clearing the frontiers the robot knows of. Its
    ``coverage`` keeps counting the true map's free cells and is meaningless.
    """
    world = env.lookahead_copy()  # its own belief and graph; its world is replaced below
    world.required_coverage = 0.0  # its coverage counts the true map's cells: ends when exhausted
    occupied = world.belief != FREE  # [H+2p, W+2p]: known walls, the padding, and the unknown
    world._occupied = occupied.ravel()
    world._truth = np.where(world._occupied, OCCUPIED, FREE).astype(np.int8)
    world._sweeps = {}  # cached sweeps saw the true map
    p = env.pad
    world.grid_map = GridMap(occupied=occupied[p:-p, p:-p].copy(), start=env.grid_map.start)
    return world


def imagined_world(env: GridExploreEnv, guess_occupied: np.ndarray) -> GridExploreEnv | None:
    """A copy in a world of the robot's own making: its belief, every unknown cell as the
    [H, W] bool ``guess_occupied`` says (a map predictor's guess), and a lattice and graph
    built from that world alone, so a planner may look ahead in it honestly; None when the
    robot stands on a node the guessed lattice has not (a lookout or an approach node).

    The true lattice's sites and routes in unknown space would tell where free cells are, so
    the copy builds its own from the guessed world, anchored at the same start (the same
    lattice points). Where the robot's graph has a node, the cells its box searches before
    the node's position are occupied (``env.lattice.cells_before_sites``): the node says
    so. The copy's graph grows from the belief as a fresh one would, the robot on its own
    node, nothing else visited. It reads ``env``'s belief, graph nodes, start
    and step count, never its true map; its ``coverage`` is meaningless (NaN in ``step``'s
    info) and its episode ends once no node sees a frontier.
    """
    p, graph = env.pad, env.graph
    belief = env.belief[p:-p, p:-p]
    occupied = np.where(belief == UNKNOWN, guess_occupied, belief != FREE)
    lattice = graph.lattice_of_node[: graph.n_nodes]
    on_lattice = lattice < graph.geometry.n_lattice  # lookouts' ids lie past the lattice
    before = cells_before_sites(graph.geometry.lattice_rc[lattice[on_lattice]],
                                graph.node_rc[: graph.n_nodes][on_lattice], env.config.node_spacing, occupied.shape)
    occupied[before[:, 0], before[:, 1]] |= belief[before[:, 0], before[:, 1]] == UNKNOWN  # known cells stay
    world = copy.copy(env)
    world._set_world(GridMap(occupied=occupied, start=env.grid_map.start))
    world.belief = env.belief.copy()
    world._reachable = np.zeros_like(env._reachable)
    world.reachable_free = world.known_free = 0
    world.required_coverage = 0.0
    world.path = list(env.path)
    world.episode_over = world.stuck = world.time_limit_ends_episode = False
    world._refresh()
    point = int(graph.lattice_of_node[env.robot_node])
    node = world.graph.node_of_lattice[point] if point < graph.geometry.n_lattice else -1
    if node < 0 or (world.graph.node_rc[node] != graph.node_rc[env.robot_node]).any():
        return None
    world.robot_node = int(node)
    world.graph.visited[node] = True
    return world
