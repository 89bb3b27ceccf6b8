"""The context features (``env.context``): unknown and free fractions around each node."""
import numpy as np
import pytest

from env.baselines import greedy
from env.context import CONTEXT_FEATURE_NAMES, PRIVILEGED_FEATURE_NAMES, context_features, summed_area, window_counts
from env.grid_explore import GridExploreEnv
from env.observation import N_NODE_FEATURES, NODE_FEATURES, node_feature_names
from env.sensing import FREE, OCCUPIED, UNKNOWN


def fractions_by_hand(belief: np.ndarray, r: int, c: int, half: int) -> tuple[float, float]:
    """Unknown and free fractions of the square of half-side ``half`` around (r, c), cell by cell;
    cells outside ``belief`` count as neither."""
    unknown = free = 0
    for i in range(r - half, r + half + 1):
        for j in range(c - half, c + half + 1):
            if 0 <= i < belief.shape[0] and 0 <= j < belief.shape[1]:
                unknown += belief[i, j] == UNKNOWN
                free += belief[i, j] == FREE
    area = (2 * half + 1) ** 2
    return unknown / area, free / area


def test_window_counts_match_counting_cell_by_cell():
    rng = np.random.default_rng(0)
    mask = rng.random((9, 13)) < 0.4
    table = summed_area(mask)
    rc = np.array([[0, 0], [4, 6], [8, 12], [2, 11], [7, 1]])
    for half in (0, 1, 3, 20):
        expected = [mask[max(r - half, 0): r + half + 1, max(c - half, 0): c + half + 1].sum() for r, c in rc]
        assert window_counts(table, rc, half).tolist() == expected


def test_context_features_match_a_count_by_hand_near_and_far():
    rng = np.random.default_rng(1)
    belief = rng.choice([UNKNOWN, FREE, OCCUPIED], size=(17, 23)).astype(np.int8)
    rc = np.array([[0, 0], [8, 11], [16, 22], [3, 20]])
    got = context_features(belief, rc, sensor_range=3)
    assert got.shape == (4, len(CONTEXT_FEATURE_NAMES)) and got.dtype == np.float32
    for i, (r, c) in enumerate(rc):
        expected = fractions_by_hand(belief, r, c, 3) + fractions_by_hand(belief, r, c, 6)
        np.testing.assert_allclose(got[i], expected, rtol=1e-6)


def test_the_env_appends_the_context_columns_and_leaves_the_others_as_they_are():
    kwargs = dict(map_size=32, sensor_range=5, max_steps=12)
    plain, rich = GridExploreEnv(**kwargs), GridExploreEnv(**kwargs, context_features=True)
    assert rich.observation_space[NODE_FEATURES].shape == (plain.n_max, N_NODE_FEATURES + 4)
    assert node_feature_names(True)[N_NODE_FEATURES:] == CONTEXT_FEATURE_NAMES
    a, _ = plain.reset(seed=4)
    b, _ = rich.reset(seed=4)
    for step in range(6):
        assert rich.observation_space.contains(b)
        np.testing.assert_array_equal(b[NODE_FEATURES][:, :N_NODE_FEATURES], a[NODE_FEATURES])
        n, pad = rich.graph.n_nodes, rich.pad
        for node in range(n):
            r, c = rich.graph.node_rc[node] + pad
            expected = fractions_by_hand(rich.belief, r, c, 5) + fractions_by_hand(rich.belief, r, c, 10)
            np.testing.assert_allclose(b[NODE_FEATURES][node, N_NODE_FEATURES:], expected, rtol=1e-6)
        assert not b[NODE_FEATURES][n:].any()  # padding rows stay zero
        if step == 0:
            assert b[NODE_FEATURES][:n, N_NODE_FEATURES].max() > 0  # the start leaves unknown around
        action = greedy(a, plain)
        a, *_ = plain.step(action)
        b, *_ = rich.step(action)


def test_context_features_must_be_a_bool():
    with pytest.raises(ValueError, match="context_features must be true or false, got 'yes'"):
        GridExploreEnv(context_features="yes")


def hidden_free_by_hand(env: GridExploreEnv, r: int, c: int, half: int) -> float:
    """The fraction of the square of half-side ``half`` around padded (r, c) that the belief holds
    unknown and the true map free and reachable, cell by cell."""
    reachable = env._reachable.reshape(env.belief.shape)
    count = 0
    for i in range(r - half, r + half + 1):
        for j in range(c - half, c + half + 1):
            if 0 <= i < env.belief.shape[0] and 0 <= j < env.belief.shape[1]:
                count += env.belief[i, j] == UNKNOWN and reachable[i, j]
    return count / (2 * half + 1) ** 2


def test_the_privileged_columns_count_what_the_true_map_hides_after_the_context_columns():
    kwargs = dict(map_size=32, sensor_range=5, max_steps=12)
    plain = GridExploreEnv(**kwargs, context_features=True)
    rich = GridExploreEnv(**kwargs, context_features=True, privileged_features=True)
    assert node_feature_names(True, True)[-2:] == PRIVILEGED_FEATURE_NAMES
    assert rich.observation_space[NODE_FEATURES].shape == (plain.n_max, N_NODE_FEATURES + 6)
    a, _ = plain.reset(seed=7)
    b, _ = rich.reset(seed=7)
    walls_hidden = 0
    for step in range(6):
        assert rich.observation_space.contains(b)
        np.testing.assert_array_equal(b[NODE_FEATURES][:, :-2], a[NODE_FEATURES])
        n, pad = rich.graph.n_nodes, rich.pad
        for node in range(n):
            r, c = rich.graph.node_rc[node] + pad
            expected = [hidden_free_by_hand(rich, r, c, 5), hidden_free_by_hand(rich, r, c, 10)]
            np.testing.assert_allclose(b[NODE_FEATURES][node, -2:], expected, rtol=1e-6)
        # Unknown cells that are walls on the true map are not counted: hidden <= unknown.
        unknown_near, hidden_near = b[NODE_FEATURES][:n, N_NODE_FEATURES], b[NODE_FEATURES][:n, -2]
        assert (hidden_near <= unknown_near + 1e-6).all()
        walls_hidden += int((hidden_near < unknown_near - 1e-6).sum())
        assert not b[NODE_FEATURES][n:].any()
        action = greedy(a, plain)
        a, *_ = plain.step(action)
        b, *_ = rich.step(action)
    assert walls_hidden > 0  # the map has unknown walls, so the columns differ from unknown_near


def test_privileged_features_must_be_a_bool():
    with pytest.raises(ValueError, match="privileged_features must be true or false, got 1"):
        GridExploreEnv(privileged_features=1)
