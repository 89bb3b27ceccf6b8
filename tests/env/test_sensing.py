import numpy as np
import pytest

from env.frontiers import frontier_mask
from env.geometry import disc_offsets, line_cells
from env.sensing import FREE, OCCUPIED, UNKNOWN, Sensor, reveal

PAD = 5


def _observed(occupied: np.ndarray, robot: tuple[int, int], sensor_range: int) -> np.ndarray:
    """What a sensor at ``robot`` observes, as an unpadded bool mask."""
    padded = np.pad(occupied, PAD, constant_values=True)
    stride = padded.shape[1]
    sensor = Sensor(sensor_range, stride)
    flat = sensor.observe(padded.ravel(), np.array([(robot[0] + PAD) * stride + robot[1] + PAD]))
    mask = np.zeros(padded.size, dtype=bool)
    mask[flat] = True
    return mask.reshape(padded.shape)[PAD:-PAD, PAD:-PAD]


def test_wall_blocks_line_of_sight():
    occupied = np.zeros((7, 9), dtype=bool)
    occupied[1:6, 4] = True  # a wall between the robot (col 2) and cols 5..8
    seen = _observed(occupied, (3, 2), sensor_range=3)
    assert seen[3, 4]  # the wall itself is seen
    assert not seen[3, 5]  # right behind it is not
    assert seen[3, 1] and seen[0, 2] and seen[3, 3]
    assert not seen[:, 6:].any()


def test_range_limit_plus_resolved_neighbours():
    occupied = np.zeros((1, 13), dtype=bool)
    seen = _observed(occupied, (0, 2), sensor_range=3)
    # Cells within 3 are seen; the free cell at 3 also shows its side, so col 6 is known too.
    assert seen[0, :7].all() and not seen[0, 7:].any()


def test_corner_touching_obstacles_block_diagonal_sight():
    occupied = np.zeros((5, 5), dtype=bool)
    occupied[1, 2] = occupied[2, 1] = True  # two walls meeting at a corner on the diagonal
    seen = _observed(occupied, (1, 1), sensor_range=3)
    assert seen[1, 2] and seen[2, 1] and not seen[2, 2] and not seen[3, 3]
    # A sight line through an exact corner covers both side cells, so one wall there blocks it.
    assert {(0, 1), (1, 0)} <= {tuple(c) for c in line_cells(2, 2)}


@pytest.mark.parametrize("offset", [(0, 5), (3, 3), (2, 5), (-4, 1), (5, -2), (-3, -3)])
def test_line_cells_symmetric_connected_and_ends_at_target(offset):
    cells = line_cells(*offset)
    assert tuple(cells[0]) == (0, 0) and tuple(cells[-1]) == offset
    back = {(offset[0] + r, offset[1] + c) for r, c in line_cells(-offset[0], -offset[1])}
    assert back == {tuple(c) for c in cells}
    # 4-connected: every cell but the origin has a 4-neighbour earlier in the list.
    seen = {(0, 0)}
    for r, c in cells[1:]:
        assert {(r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1)} & seen
        seen.add((r, c))


def test_disc_offsets_count():
    assert len(disc_offsets(1)) == 5
    assert len(disc_offsets(2)) == 13


def test_frontier_on_hand_made_belief():
    U, F, O = UNKNOWN, FREE, OCCUPIED
    belief = np.array([
        [O, O, O, O, O],
        [O, F, F, F, O],
        [O, F, F, O, U],
        [O, F, F, F, U],
        [O, U, U, U, U],
    ], dtype=np.int8)
    four = frontier_mask(belief, connectivity=4)
    expected4 = np.zeros_like(four)
    expected4[3, 1] = expected4[3, 2] = expected4[3, 3] = True
    assert (four == expected4).all()
    expected8 = expected4.copy()
    expected8[1, 3] = True  # its only unknown neighbour, (2, 4), is diagonal
    assert (frontier_mask(belief, connectivity=8) == expected8).all()
    with pytest.raises(ValueError, match="connectivity must be 4 or 8, got 6"):
        frontier_mask(belief, connectivity=6)


def test_reveal_returns_only_the_newly_known_cells():
    belief = np.array([UNKNOWN, FREE, UNKNOWN, UNKNOWN], dtype=np.int8)
    truth = np.array([FREE, FREE, OCCUPIED, FREE], dtype=np.int8)
    assert reveal(belief, truth, np.array([0, 1, 2])).tolist() == [0, 2]
    assert belief.tolist() == [FREE, FREE, OCCUPIED, UNKNOWN]
    assert reveal(belief, truth, np.array([0, 1, 2])).size == 0
