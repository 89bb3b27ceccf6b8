"""planner.decision_picture: one decision's panels, the belief and each candidate's route on the true map."""
import numpy as np
import pytest
from PIL import Image

from env.sensing import FREE, OCCUPIED, UNKNOWN
from planner import decision_picture as decision
from planner.decision_picture import Candidate, decision_figure


def small_state():
    belief = np.full((12, 16), UNKNOWN, dtype=np.int8)
    belief[2:6, 2:6] = FREE
    belief[1, 1:7] = OCCUPIED
    truth = np.zeros((12, 16), dtype=bool)
    truth[[0, -1]] = True
    return belief, truth


def test_one_panel_a_candidate_beside_the_belief_with_each_route_in_its_colour(tmp_path):
    belief, truth = small_state()
    east = Candidate("east", (3, 5), np.array([(3, 3), (3, 4), (3, 5), (3, 12)]))
    south = Candidate("south", (5, 3), np.array([(3, 3), (5, 3), (10, 3)]))
    path = tmp_path / "decision.png"
    decision_figure(belief, truth, [east, south], path, "a title")
    image = np.asarray(Image.open(path).convert("RGB")).astype(int)
    assert image.shape[1] > 2.5 * image.shape[0]  # three panels side by side
    for colour in ([214, 39, 40], [44, 160, 44]):  # tab:red and tab:green, the two routes
        assert (np.abs(image - colour).sum(axis=2) < 60).sum() > 20
    decision_figure(belief, truth, [east], tmp_path / "one.png")
    one = np.asarray(Image.open(tmp_path / "one.png").convert("RGB")).astype(int)
    assert one.shape[1] < image.shape[1] and not (np.abs(one - [44, 160, 44]).sum(axis=2) < 60).any()


@pytest.mark.parametrize("change, message", [
    (lambda b, t, c: (b, t[:, :8], c), "must have one shape"),
    (lambda b, t, c: (b, t, []), "0 candidates: draw 1 to 4"),
    (lambda b, t, c: (b, t, c * 5), "5 candidates: draw 1 to 4"),
    (lambda b, t, c: (b, t, [Candidate("x", (3, 3), np.zeros((0, 2)))]), "a route of at least the robot's cell"),
])
def test_bad_input_is_named(change, message, tmp_path):
    belief, truth = small_state()
    candidates = [Candidate("east", (3, 5), np.array([(3, 3), (3, 5)]))]
    with pytest.raises(ValueError, match=message):
        decision_figure(*change(belief, truth, candidates), tmp_path / "x.png")
    assert not (tmp_path / "x.png").exists()


def test_the_box_holds_the_free_the_known_and_the_routes_with_a_margin():
    belief, truth = small_state()
    truth[:] = True
    truth[4:7, 5:9] = False  # free: rows 4-6, cols 5-8
    belief[:] = UNKNOWN
    belief[5, 3] = FREE  # known: col 3
    route = np.array([(5, 5), (9, 6)])  # down to row 9
    assert decision.drawn_box(belief, truth, [route], margin=2) == ((2, 1), (12, 11))
    assert decision.drawn_box(belief, truth, [route], margin=0) == ((4, 3), (10, 9))
