"""planner.map_guess_picture: the three panels of a predictor's guess, written to a file."""
import numpy as np
import pytest
from PIL import Image

from env.sensing import FREE, OCCUPIED, UNKNOWN
from planner.map_guess_picture import map_guess_figure


def test_the_figure_is_written_and_shapes_must_agree(tmp_path):
    belief = np.full((12, 16), UNKNOWN, dtype=np.int8)
    belief[2:6, 2:6] = FREE
    belief[1, 1:7] = OCCUPIED
    truth = np.zeros((12, 16), dtype=bool)
    truth[[0, -1]] = True
    probability = np.linspace(0, 1, 12 * 16).reshape(12, 16)
    path = tmp_path / "guess.png"
    map_guess_figure(belief, probability, truth, path, robot=(3, 3))
    image = np.asarray(Image.open(path).convert("RGB"))
    assert image.shape[1] > 2 * image.shape[0]  # three panels side by side
    assert (np.abs(image.astype(int) - [214, 39, 40]).sum(axis=2) < 60).any()  # the robot, in red
    with pytest.raises(ValueError, match="must have one shape"):
        map_guess_figure(belief, probability[:, :8], truth, path)
