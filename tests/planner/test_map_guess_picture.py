"""planner.map_guess_picture: the three panels of a predictor's guess, written to a file, and its command."""
import numpy as np
import pytest
import torch
from PIL import Image

from env.sensing import FREE, OCCUPIED, UNKNOWN
from planner.files import planner_entry
from planner.map_guess_picture import (
    DARK_BROWN,
    TAN,
    main,
    map_guess_figure,
    unknown_tinted,
)
from planner.predictor import MapPredictor
from planner.predictor_files import predictor_file
from run.pretrained import export


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


def test_the_cells_still_unknown_are_tan_or_dark_brown_as_the_title_says(tmp_path):
    truth = np.zeros((6, 6), dtype=bool)
    truth[0] = True
    unknown = np.zeros((6, 6), dtype=bool)
    unknown[:3] = True
    tinted = unknown_tinted(truth, unknown)
    np.testing.assert_allclose(tinted[1, 1], TAN)  # unknown free
    np.testing.assert_allclose(tinted[0, 1], DARK_BROWN)  # unknown wall
    np.testing.assert_allclose(tinted[4, 1], (1, 1, 1))  # known free: white
    red, green, blue = TAN
    assert red > green > blue and red - blue < 0.25  # a light, muted brown: tan, not orange
    belief = np.full((6, 6), FREE, dtype=np.int8)
    belief[:3] = UNKNOWN
    map_guess_figure(belief, np.zeros((6, 6)), truth, tmp_path / "guess.png")
    image = np.asarray(Image.open(tmp_path / "guess.png").convert("RGB")).astype(int)
    assert (np.abs(image - np.array(TAN) * 255).sum(axis=2) < 6).sum() > 100  # the tan of the third panel


def test_the_command_draws_the_guess_after_greedys_moves(smoke_run, tmp_path, capsys):
    torch.save(predictor_file(MapPredictor(width=4), {}), tmp_path / "predictor.pt")
    export(smoke_run, tmp_path / "agent.pt", planner=planner_entry(tmp_path / "predictor.pt"))
    assert main(["--checkpoint", str(tmp_path / "agent.pt"), "--moves", "3", "--out", str(tmp_path / "g.png")]) == 0
    assert "after 3 of greedy's moves" in capsys.readouterr().out
    assert Image.open(tmp_path / "g.png").size[0] > 0
    with pytest.raises(SystemExit):
        main(["--checkpoint", str(smoke_run), "--out", str(tmp_path / "h.png")])
    assert "carries no map predictor" in capsys.readouterr().err and not (tmp_path / "h.png").exists()
