"""``experiments.split_twins``: validation maps against the training part, cell for cell."""
import sys

import numpy as np
import pytest
from PIL import Image

from env.map_collection import in_validation
from experiments import split_twins
from tests.map_folders import room_map


def test_cell_differences_match_counting_the_differing_cells_across_chunks(monkeypatch):
    monkeypatch.setattr(split_twins, "CHUNK", 3)  # 8 training maps: three chunks, the last short
    rng = np.random.default_rng(0)
    train = rng.random((8, 40)) < 0.5
    validation = rng.random((5, 40)) < 0.5
    validation[1] = train[6]  # a twin in the third chunk
    validation[3] = train[2]
    validation[3, :4] ^= True  # 4 cells from a map of the first chunk
    nearest, close = split_twins.cell_differences(validation, train, within=4)
    counted = (validation[:, None, :] != train[None, :, :]).sum(-1)  # [5, 8], by brute force
    assert nearest.tolist() == counted.min(1).tolist()
    assert close == [(i, j, int(counted[i, j])) for i, j in zip(*np.nonzero(counted <= 4))]
    assert (1, 6, 0) in close and (3, 2, 4) in close


def test_cell_differences_need_a_training_map():
    with pytest.raises(ValueError, match="no map"):
        split_twins.cell_differences(np.zeros((2, 4), bool), np.zeros((0, 4), bool), within=0)


def write_png(path, occupied):
    Image.fromarray(np.where(occupied, 0, 255).astype(np.uint8)).save(path)


def test_the_cli_names_a_validation_map_that_repeats_a_training_map(tmp_path, monkeypatch, capsys):
    names = [f"{i}.png" for i in range(1, 60)]
    held_out = [name for name in names if in_validation(name)][:2]  # 12.png, 38.png
    trained = [name for name in names if not in_validation(name)][:3]
    assert len(held_out) == 2 and len(trained) == 3
    base = room_map(12, 16)
    for k, name in enumerate(trained):
        occupied = base.copy()
        occupied[2:4, 2 + 3 * k] = True  # each training map a wall piece of its own
        write_png(tmp_path / name, occupied)
    write_png(tmp_path / held_out[0], np.array(Image.open(tmp_path / trained[1])) == 0)  # a twin of trained[1]
    other = base.copy()
    other[5:10, 3] = True  # 5 cells from the room, 7 from each training map
    write_png(tmp_path / held_out[1], other)
    write_png(tmp_path / "99.png", room_map(10, 14))  # smaller: padded with walls to 12 x 16, as the env plays it

    monkeypatch.setattr(sys, "argv", ["split_twins", "--config", "configs/default.yaml",
                                      "--env", f"map_dir={tmp_path}", "--within", "0"])
    assert split_twins.main() == 0
    out = capsys.readouterr().out
    assert f"{2 + in_validation('99.png')} validation maps against" in out
    assert "12 x 16 cells" in out
    assert "pairs differing in at most 0 cells: 1" in out
    assert f"  {held_out[0]} (validation, map 0 of the split) and {trained[1]} (training part): 0 cells" in out
    assert held_out[1] not in out.split("pairs differing")[1]


@pytest.mark.parametrize("argv, message", [
    (["--within", "-1"], "--within -1: a number of cells"),
    ([], "plays no map folder"),
    (["--env", "map_dir=no/such/folder"], "map_dir='no/such/folder' is neither a folder nor a glob pattern"),
])
def test_the_cli_refuses_bad_options(argv, message, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["split_twins", "--config", "configs/default.yaml", *argv])
    with pytest.raises(SystemExit):
        split_twins.main()
    assert message in capsys.readouterr().err


def test_the_cli_refuses_a_folder_whose_maps_are_all_in_one_part(tmp_path, monkeypatch, capsys):
    for name in ("1.png", "2.png"):
        assert not in_validation(name)
        write_png(tmp_path / name, room_map(8, 8))
    monkeypatch.setattr(sys, "argv", ["split_twins", "--config", "configs/default.yaml", "--env", f"map_dir={tmp_path}"])
    with pytest.raises(SystemExit):
        split_twins.main()
    assert "its 2 maps are all in one part" in capsys.readouterr().err


def test_the_cli_names_a_map_without_a_free_cell_in_one_line(tmp_path, monkeypatch, capsys):
    write_png(tmp_path / "12.png", room_map(8, 8))  # one map in each part
    write_png(tmp_path / "1.png", np.ones((8, 8), bool))  # sound file, all wall: only decoding tells
    monkeypatch.setattr(sys, "argv", ["split_twins", "--config", "configs/default.yaml", "--env", f"map_dir={tmp_path}"])
    with pytest.raises(SystemExit):
        split_twins.main()
    err = capsys.readouterr().err
    assert "1.png" in err and "Traceback" not in err
