"""Lookouts (``ViewpointGraph.add_lookout``): a node where the lattice's nodes cannot see a pocket."""
import numpy as np
import pytest

from env.baselines import greedy, nearest_frontier
from env.grid_explore import GridExploreEnv
from env.observation import CURRENT_INDEX, NEIGHBORS
from env.sensing import FREE
from run.seeding import eval_episode_seed
from tests.helpers import hop_length_by_hand

STUCK_BEFORE = [10, 170, 288]
"""Held-out 16 x 16 maps (seed 900007) on which greedy and nearest frontier ended stuck at 0.975 to
0.981 coverage before lookouts: unseen cells in the box of a node that cannot see them, every
lattice neighbour of which already had its node."""


def lookouts(env) -> list[int]:
    graph = env.graph
    return [node for node in range(graph.n_nodes) if graph.lattice_of_node[node] > graph.geometry.n_lattice]


@pytest.mark.parametrize("policy", [greedy, nearest_frontier])
@pytest.mark.parametrize("episode", STUCK_BEFORE)
def test_lookouts_let_the_baselines_explore_maps_they_were_stuck_on(policy, episode):
    env = GridExploreEnv(map_size=16)
    obs, info = env.reset(seed=eval_episode_seed(900007, episode))
    assert env.n_max == 16 + 4
    terminated = truncated = False
    while not (terminated or truncated):
        before, coverage = len(lookouts(env)), info["coverage"]
        obs, _, terminated, truncated, info = env.step(policy(obs, env))
        node = int(obs[CURRENT_INDEX])
        assert env.path[-1] == tuple(env.graph.node_rc[node])  # every hop ends on its node's cell
        if len(lookouts(env)) > before:
            assert coverage < 0.99 and info["coverage"] < 0.99  # added only where the map was not explored
            assert env.graph.utility[lookouts(env)[-1]] > 0  # and it sees a frontier
    assert terminated and not info["stuck"] and info["coverage"] >= 0.99
    assert lookouts(env)
    neighbors = obs[NEIGHBORS]
    for lookout in lookouts(env):
        slots = np.flatnonzero(neighbors[lookout, 1:] >= 0) + 1
        (slot,) = slots[neighbors[lookout, slots] < lookout]  # one way back; the others lead to later lookouts
        assert set(neighbors[lookout, slots].tolist()) - {neighbors[lookout, slot]} <= set(lookouts(env))
        parent = int(neighbors[lookout, slot])
        (back,) = np.flatnonzero(neighbors[parent] == lookout)
        assert hop_length_by_hand(env, lookout, slot) == pytest.approx(hop_length_by_hand(env, parent, back))
        assert env.graph.slot_length(lookout, slot) == pytest.approx(hop_length_by_hand(env, lookout, slot))
        route = env.graph.sweep_positions(parent, back)
        assert (env.belief.ravel()[route] == FREE).all() and route[-1] == env.graph.position_flat[
            env.graph.lattice_of_node[lookout]]


def test_with_no_room_for_a_lookout_the_episode_ends_stuck_as_before():
    env = GridExploreEnv(map_size=16, n_max=16)  # the lattice's capacity: every node is a lattice node
    obs, info = env.reset(seed=eval_episode_seed(900007, 170))
    terminated = truncated = False
    while not (terminated or truncated):
        obs, _, terminated, truncated, info = env.step(greedy(obs, env))
    assert truncated and info["stuck"] and 0.97 < info["coverage"] < 0.99 and not lookouts(env)


def test_an_explored_map_gets_no_lookout():
    """A map that ends explored plays as it did before lookouts: none is ever added."""
    for episode in range(12):
        env = GridExploreEnv(map_size=16)
        obs, info = env.reset(seed=eval_episode_seed(900007, episode))
        terminated = truncated = False
        while not (terminated or truncated):
            obs, _, terminated, truncated, info = env.step(greedy(obs, env))
        assert terminated and (episode == 10) == bool(lookouts(env)), episode
