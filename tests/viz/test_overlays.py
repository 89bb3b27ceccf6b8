"""viz.overlays.pointer_overlay: the pointer drawn on an enlarged frame, every label inside it."""
import numpy as np

from env.rendering import CELL_PX
from viz.overlays import pointer_overlay


def _dark(picture: np.ndarray) -> np.ndarray:
    return (picture < 60).all(axis=-1)


def test_the_overlay_enlarges_the_frame_and_keeps_a_label_at_the_edge_inside():
    frame = np.full((16 * CELL_PX, 16 * CELL_PX, 3), 255, dtype=np.uint8)
    positions = np.array([[8, 15], [8, 2]])  # node 0 at the right edge, node 1 at the left
    picture = pointer_overlay(frame, positions, np.array([0, 1, -1]), np.array([0.9, 0.1, 0.0]), chosen=0, scale=4)
    assert picture.shape == (512, 512, 3)
    cell, row = CELL_PX * 4, slice(8 * CELL_PX * 4, 9 * CELL_PX * 4)  # the row of cells both nodes stand in
    right_disc = 15.5 * cell - cell * (0.5 + 1.6 * np.sqrt(0.9))  # the left edge of node 0's disc
    left_disc = 2.5 * cell + cell * (0.5 + 1.6 * np.sqrt(0.1))  # the right edge of node 1's
    assert _dark(picture[row, int(right_disc) - 100: int(right_disc) - 1]).sum() > 40  # "90%", left of its disc
    assert _dark(picture[row, int(left_disc) + 1: int(left_disc) + 100]).sum() > 40  # "10%", right of its disc
    plain = pointer_overlay(frame, positions, np.array([0, 1, -1]), np.array([0.9, 0.1, 0.0]), chosen=0)
    assert plain.shape == frame.shape
