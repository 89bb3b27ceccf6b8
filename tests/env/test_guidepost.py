"""The guidepost feature: the shortest graph path from the robot to the nearest node with utility.

Checked against an independent all-pairs shortest-path computation (Floyd-Warshall over the
observation's neighbour table, hop lengths from the routes' cells), not against ``graph.guidepost``.
"""
import numpy as np
import pytest

from env.baselines import nearest_frontier
from env.grid_explore import GridExploreEnv
from env.observation import ACTION_MASK, CURRENT_INDEX, NEIGHBORS, NODE_FEATURE_NAMES, NODE_FEATURES
from tests.helpers import all_pairs_hop_distances, hop_length_by_hand, viewpoint_graph, walled_room

GUIDEPOST = NODE_FEATURE_NAMES.index("guidepost")


def _check_guidepost(obs: dict, env: GridExploreEnv) -> None:
    graph, n = env.graph, env.graph.n_nodes
    robot = int(obs[CURRENT_INDEX])
    flagged = set(np.flatnonzero(obs[NODE_FEATURES][:, GUIDEPOST]).tolist())
    dist = all_pairs_hop_distances(obs, env)
    useful = np.flatnonzero(graph.utility[:n] > 0)
    if not useful.size or graph.utility[robot] > 0:
        assert not flagged
        return
    assert robot not in flagged
    nearest = dist[robot, useful].min()
    # The flagged nodes, in order of their distance from the robot, must be a walkable path
    # whose length is the distance to the nearest useful node, and which ends at a useful node.
    path = sorted(flagged, key=lambda node: dist[robot, node])
    length, previous = 0.0, robot
    for node in path:
        assert node in obs[NEIGHBORS][previous], f"guidepost node {node} is not adjacent to {previous}"
        length += hop_length_by_hand(env, previous, list(obs[NEIGHBORS][previous]).index(node))
        previous = node
    assert graph.utility[path[-1]] > 0
    assert graph.utility[path[:-1]].sum() == 0, "the path passes a useful node: it is not to the nearest"
    assert length == pytest.approx(nearest)


@pytest.mark.parametrize("family", ["rooms", "caves", "maze", "obstacles"])
def test_guidepost_is_a_shortest_path_to_the_nearest_useful_node(family):
    env = GridExploreEnv(map_family=family, map_size=28, max_steps=60)
    checked = 0
    for seed in range(3):
        obs, _ = env.reset(seed=seed)
        rng = np.random.default_rng(seed)
        while True:
            _check_guidepost(obs, env)
            checked += 1
            obs, _, terminated, truncated, _ = env.step(int(rng.choice(np.flatnonzero(obs[ACTION_MASK]))))
            if terminated or truncated:
                _check_guidepost(obs, env)
                break
    assert checked > 30


def test_guidepost_is_empty_once_exploration_is_complete():
    env = GridExploreEnv(map_family="rooms", map_size=24)
    obs, _ = env.reset(seed=3)
    terminated = False
    while not terminated:
        assert obs[NODE_FEATURES][:, GUIDEPOST].any()  # something is left to explore
        obs, _, terminated, truncated, _ = env.step(nearest_frontier(obs, env))
        assert not truncated
    assert not obs[NODE_FEATURES][:, GUIDEPOST].any()


def test_nearest_frontier_follows_the_guidepost():
    env = GridExploreEnv(map_family="caves", map_size=28)
    obs, _ = env.reset(seed=5)
    for _ in range(20):
        slot = nearest_frontier(obs, env)
        target = int(obs[NEIGHBORS][int(obs[CURRENT_INDEX]), slot])
        assert obs[NODE_FEATURES][target, GUIDEPOST] == 1
        obs, _, terminated, _, _ = env.step(slot)
        if terminated:
            break


def test_guidepost_on_a_hand_built_room_takes_the_nearest_then_the_lower_index():
    graph = viewpoint_graph(walled_room())  # the full 3x3 lattice; node 0 is the start, in the middle
    assert graph.n_nodes == 9
    position = {tuple(rc): node for node, rc in enumerate(graph.positions().tolist())}
    north, south, corner = position[(1, 5)], position[(9, 5)], position[(1, 1)]
    graph.utility[:] = 0
    assert graph.guidepost(0) == []
    graph.utility[[corner, max(north, south)]] = 1  # the corner is a diagonal hop: farther (5.66 > 4)
    assert graph.guidepost(0) == [max(north, south)]
    graph.utility[min(north, south)] = 1  # two useful nodes 4 cells away: the lower index wins
    assert graph.guidepost(0) == [min(north, south)]
    graph.utility[0] = 1  # the robot's own node has utility: nothing to walk to
    assert graph.guidepost(0) == []
    graph.utility[:] = 0
    graph.utility[position[(9, 9)]] = 1  # two hops away, via the diagonal (the shortest route)
    assert graph.guidepost(position[(1, 1)]) == [0, position[(9, 9)]]
