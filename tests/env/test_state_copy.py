"""``env.state_copy.copy_except`` and the play-out copies built on it: nothing a copy does reaches
the original, and what no step changes is shared rather than copied."""
import copy

import gymnasium as gym
import numpy as np

from env.greedy_value import play_greedy
from env.grid_explore import GridExploreEnv
from env.state_copy import copy_except


def frozen(value, seen=None):
    """A hashable, comparable picture of ``value`` and everything it holds (arrays by bytes,
    generators by state, objects by their attributes): equal pictures, equal states."""
    seen = set() if seen is None else seen
    if isinstance(value, np.ndarray):
        return "array", value.dtype.str, value.shape, value.tobytes()
    if isinstance(value, (list, tuple)):
        return type(value).__name__, tuple(frozen(v, seen) for v in value)
    if isinstance(value, dict):
        return "dict", tuple((repr(k), frozen(v, seen)) for k, v in value.items())
    if isinstance(value, np.random.Generator):
        return "generator", repr(value.bit_generator.state)
    if hasattr(value, "__dict__") and not isinstance(value, type):
        if id(value) in seen:
            return "seen", type(value).__name__
        seen.add(id(value))
        return type(value).__name__, frozen(vars(value), seen)
    return value


class Holder:
    def __init__(self):
        self.array, self.table = np.arange(4), np.zeros(3)
        self.items, self.lookup, self.count = [1, 2], {"a": 1}, 7
        self.inner = Holder.Inner()

    class Inner:
        def __init__(self):
            self.values = [0]


def test_copy_except_copies_what_it_is_not_told_to_share():
    original = Holder()
    twin = copy_except(original, frozenset({"table"}))
    twin.array[0] = 99
    twin.items.append(3)
    twin.lookup["b"] = 2
    twin.inner.values.append(1)  # a deep copy, one level down too
    twin.table[0] = 5.0  # shared: the original sees it
    assert original.array[0] == 0 and original.items == [1, 2] and original.lookup == {"a": 1}
    assert original.inner.values == [0]
    assert twin.table is original.table and original.table[0] == 5.0
    assert twin.count == 7


def mid_episode() -> GridExploreEnv:
    """A rooms map a few greedy moves in: approach nodes and lookouts give the graph's dicts entries."""
    env = gym.make("GridExplore-v0", map_size=32, map_family="rooms").unwrapped
    env.reset(seed=5)
    play_greedy(env, 4)
    return env


def test_playing_a_lookahead_copy_to_the_end_leaves_the_original_as_it_was():
    env = mid_episode()
    before = {name: frozen(value) for name, value in vars(env).items() if name != "_sweeps"}
    twin = env.lookahead_copy()
    _, _, terminated = play_greedy(twin, 500)
    assert terminated and twin.steps > env.steps + 5 and twin.graph.n_nodes > env.graph.n_nodes
    # The sweeps cache is shared on purpose (a route sees the same cells from either env).
    assert {name: frozen(value) for name, value in vars(env).items() if name != "_sweeps"} == before


def test_a_lookahead_copy_shares_what_no_step_changes_and_copies_the_rest():
    env = mid_episode()
    twin = env.lookahead_copy()
    for name in GridExploreEnv._FIXED_PER_EPISODE:
        assert getattr(twin, name) is getattr(env, name), name
    for name in ("geometry", "_sight_cells", "_sight_between"):
        assert getattr(twin.graph, name) is getattr(env.graph, name), name
    for name in ("belief", "path", "graph", "frontier", "_np_random"):
        assert getattr(twin, name) is not getattr(env, name), name
    for name in ("utility", "visited", "edge_valid", "node_of_lattice", "tails", "entries"):
        assert getattr(twin.graph, name) is not getattr(env.graph, name), name


def test_a_deep_copy_of_the_graph_is_the_lookahead_copys_graph():
    """``copy.deepcopy`` of an env (what tests and benches use) plays exactly as a lookahead copy."""
    env = mid_episode()
    deep, twin = copy.deepcopy(env), env.lookahead_copy()
    assert deep.graph.geometry is env.graph.geometry
    assert play_greedy(deep, 500) == play_greedy(twin, 500)
    assert frozen(vars(deep.graph)) == frozen(vars(twin.graph))
