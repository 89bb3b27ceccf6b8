"""``GridExploreEnv.state_key``: equal for states that play out alike, different as soon as
anything a move depends on differs, and every attribute of the graph accounted for."""
import copy

import numpy as np
import pytest

from env.baselines import greedy
from env.graph import ViewpointGraph
from env.greedy_value import play_greedy
from env.grid_explore import GridExploreEnv
from env.state_digest import feed, new_digest
from run.seeding import eval_episode_seed

WITH_LOOKOUT = [10, 288]
"""Held-out 16 x 16 maps (seed 900007; ``tests/env/test_lookout.py``) where greedy's ninth and tenth
moves add a lookout, next to an approach node: every kind of node the graph has."""


def mid_episode(episode=10):
    """Greedy's moves on a ``WITH_LOOKOUT`` map until it has a lookout."""
    env = GridExploreEnv(map_size=16)
    obs, _ = env.reset(seed=eval_episode_seed(900007, episode))
    while len(env.graph.node_of_lattice) == env.graph.geometry.n_lattice + 1:
        obs, *_ = env.step(greedy(obs, env))
    return env


def test_the_state_has_an_approach_node_and_a_lookout():
    graph = mid_episode().graph
    assert graph.tails and graph.entries and graph.lattice_of_node[: graph.n_nodes].max() > graph.geometry.n_lattice
    assert graph.hop_length.shape != graph.geometry.route_length.shape


def test_copies_and_what_no_move_reads_keep_the_key():
    env = mid_episode()
    key = env.state_key()
    assert env.lookahead_copy().state_key() == key and copy.deepcopy(env).state_key() == key
    twin = env.lookahead_copy()
    twin.steps += 3
    twin.travel_distance += 10.0
    twin.path.append(twin.path[0])
    twin.graph.visited[:] = ~twin.graph.visited
    assert twin.state_key() == key


def test_a_move_changes_the_key():
    env = mid_episode()
    twin = env.lookahead_copy()
    play_greedy(twin, 1)
    assert twin.state_key() != env.state_key()


def perturbed(value):
    """A copy of ``value`` that differs from it where the digest reads it (within the node
    tables' first rows; the hop lengths and neighbour table anywhere)."""
    if isinstance(value, dict):  # one more entry, its key of the kind the dict holds
        key = next(iter(value))
        return {**value, (10**6,) * len(key) if isinstance(key, tuple) else 10**6: np.zeros(1, dtype=np.int64)}
    if isinstance(value, np.ndarray):
        out = value.copy()
        flat = out.reshape(-1)
        flat[0] = ~flat[0] if out.dtype == bool else flat[0] + 1
        return out
    return value + 1


@pytest.mark.parametrize("name", sorted(ViewpointGraph._DIGESTED))
def test_each_digested_attribute_changes_the_key(name):
    env = mid_episode()
    twin = env.lookahead_copy()
    setattr(twin.graph, name, perturbed(getattr(twin.graph, name)))
    assert twin.state_key() != env.state_key()


@pytest.mark.parametrize("name", ["belief", "robot_node"])
def test_the_belief_and_the_robots_node_change_the_key(name):
    env = mid_episode()
    twin = env.lookahead_copy()
    setattr(twin, name, perturbed(getattr(twin, name)))
    assert twin.state_key() != env.state_key()


def test_every_attribute_of_the_graph_is_digested_or_named_as_not_needed():
    """An attribute added to the graph fails this until it is digested or said to need no digest."""
    graph = mid_episode().graph
    named = (graph._DIGESTED | graph._FOLLOWS_FROM_NODES | graph._CONSTANT
             | graph._READ_BY_OBSERVATION_ONLY | graph._FIXED_PER_MAP)
    assert set(vars(graph)) == named
    assert not graph._DIGESTED & (named - graph._DIGESTED)


@pytest.mark.parametrize("episode", WITH_LOOKOUT)
def test_node_of_lattice_is_the_inverse_of_lattice_of_node(episode):
    env = GridExploreEnv(map_size=16)
    env.reset(seed=eval_episode_seed(900007, episode))
    while not env.episode_over:
        graph = env.graph
        n = graph.n_nodes
        expected = np.full(len(graph.node_of_lattice), -1)
        expected[graph.lattice_of_node[:n]] = np.arange(n)
        assert np.array_equal(graph.node_of_lattice, expected)
        assert len(graph.node_of_lattice) == max(graph.geometry.n_lattice + 1, graph.lattice_of_node[:n].max() + 1)
        play_greedy(env, 1)
    assert len(env.graph.node_of_lattice) > env.graph.geometry.n_lattice + 1  # a lookout came


def test_feed_tells_values_apart_by_type_and_shape_and_refuses_the_unknown():
    def digest(value):
        h = new_digest()
        feed(h, value)
        return h.digest()

    assert digest(np.zeros(4, dtype=np.int8)) != digest(np.zeros((2, 2), dtype=np.int8))
    assert digest(np.zeros(4, dtype=np.int8)) != digest(np.zeros(4, dtype=np.uint8))
    assert digest({1: 2}) != digest({2: 1}) and digest({1: 2, 3: 4}) == digest({3: 4, 1: 2})
    assert digest(None) != digest(0) and digest(1) != digest(1.0) and digest(1) != digest(True)
    with pytest.raises(TypeError, match="cannot digest a list"):
        digest([1])
