"""``python -m planner.files``: a pretrained file that carries a map predictor for the planner."""
import pytest
import torch

from planner.files import main as export_main
from planner.files import read_planner, retuned_planner
from planner.predictor import BELIEF_CODES, MapPredictor
from planner.predictor_files import predictor_file
from run.pretrained import export


def test_a_pretrained_file_carries_a_map_predictor_and_keeps_it_when_rewritten(smoke_run, tmp_path, capsys):
    net = MapPredictor(width=4)
    predictor = tmp_path / "predictor.pt"
    torch.save(predictor_file(net, {"maps": 1}), predictor)
    out = tmp_path / "agent.pt"
    assert export_main([str(smoke_run), str(out), "--planner", str(predictor), "--prior-weight", "2"]) == 0
    assert "with its planner" in capsys.readouterr().out
    state = torch.load(out, weights_only=True)
    assert sorted(state) == ["config", "format", "model", "planner", "trained"]
    carried = read_planner(out)
    belief = torch.randint(0, BELIEF_CODES, (1, 9, 11), dtype=torch.int8)
    assert carried.prior_weight == 2.0 and torch.equal(carried.predictor(belief), net.eval()(belief))
    assert carried.opening is None  # written without --opening: the guess plays unopened
    assert read_planner(smoke_run) is None and read_planner(export_with_no_planner(smoke_run, tmp_path)) is None
    again = tmp_path / "again.pt"
    export(out, again, ("map_size=20",))  # rewritten: the planner stays
    assert read_planner(again).prior_weight == 2.0
    assert torch.equal(read_planner(again).predictor(belief), net(belief))
    opened = tmp_path / "opened.pt"
    assert export_main([str(smoke_run), str(opened), "--planner", str(predictor), "--opening", "4"]) == 0
    assert read_planner(opened).opening == 4 and read_planner(opened).prior_weight == 0.5
    export(opened, again)  # rewritten: the opening stays with the planner
    assert read_planner(again).opening == 4


def test_a_carried_planner_is_retuned_without_naming_its_predictor(smoke_run, tmp_path, capsys):
    net = MapPredictor(width=4)
    torch.save(predictor_file(net, {"maps": 1}), tmp_path / "predictor.pt")
    opened, retuned = tmp_path / "opened.pt", tmp_path / "retuned.pt"
    assert export_main([str(smoke_run), str(opened), "--planner", str(tmp_path / "predictor.pt"), "--opening", "4"]) == 0
    assert export_main([str(opened), str(retuned), "--prior-weight", "0.25"]) == 0
    belief = torch.randint(0, BELIEF_CODES, (1, 9, 11), dtype=torch.int8)
    planner = read_planner(retuned)
    assert (planner.prior_weight, planner.opening) == (0.25, 4)  # the opening stays
    assert torch.equal(planner.predictor(belief), net.eval()(belief))
    assert export_main([str(retuned), str(retuned), "--opening", "5"]) == 0
    assert (read_planner(retuned).prior_weight, read_planner(retuned).opening) == (0.25, 5)  # the weight stays
    assert export_main([str(retuned), str(retuned), "--opening", "0"]) == 0  # as evaluate.py's --opening 0
    assert (read_planner(retuned).prior_weight, read_planner(retuned).opening) == (0.25, None)
    assert torch.load(retuned, weights_only=True)["planner"].keys() == {"predictor", "prior_weight"}
    assert export_main([str(smoke_run), str(opened), "--planner", str(tmp_path / "predictor.pt"), "--opening", "0"]) == 0
    assert read_planner(opened).opening is None
    capsys.readouterr()
    assert export_main([str(retuned), str(tmp_path / "bad.pt"), "--prior-weight", "-1"]) == 2
    assert "prior weight -1.0: a weight must be 0 or more" in capsys.readouterr().err
    assert not (tmp_path / "bad.pt").exists()


def export_with_no_planner(run, tmp_path):
    export(run, tmp_path / "plain.pt")
    return tmp_path / "plain.pt"


def test_a_bad_planner_writes_nothing(smoke_run, tmp_path, capsys):
    out = tmp_path / "agent.pt"
    (tmp_path / "not_a_predictor.pt").write_text("x")
    torch.save(predictor_file(MapPredictor(width=4), {}), tmp_path / "p.pt")
    cases = [(["--planner", str(tmp_path / "missing.pt")], "no map predictor file at"),
             (["--planner", str(tmp_path / "not_a_predictor.pt")], "does not load as a map predictor file"),
             (["--planner", str(tmp_path / "p.pt"), "--prior-weight", "-1"], "prior weight -1.0: a weight must be 0 or more"),
             (["--planner", str(tmp_path / "p.pt"), "--opening", "-1"],
              "opening -1: the side of a square of free cells, 1 or more (0: not opened)")]
    for argv, message in cases:
        assert export_main([str(smoke_run), str(out), *argv]) == 2
        assert message in capsys.readouterr().err and not out.exists()
    for option in ("--prior-weight", "--opening"):  # a run folder carries no planner to change
        assert export_main([str(smoke_run), str(out), option, "1"]) == 2
        assert "carries no planner to change: name its map predictor with --planner" in capsys.readouterr().err
        assert not out.exists()


def test_a_command_lines_planner_settings_mean_the_same_for_a_planner_and_a_carried_entry(smoke_run, tmp_path):
    torch.save(predictor_file(MapPredictor(width=4), {}), tmp_path / "p.pt")
    opened = tmp_path / "opened.pt"
    assert export_main([str(smoke_run), str(opened), "--planner", str(tmp_path / "p.pt"), "--opening", "4",
                        "--prior-weight", "0.25"]) == 0
    carried = read_planner(opened)
    for prior_weight, opening, expected in [(None, None, (0.25, 4)), (1.0, None, (1.0, 4)), (None, 0, (0.25, None)),
                                            (0.0, 6, (0.0, 6))]:
        played = carried.overridden(prior_weight, opening)  # what evaluate.py plays
        entry = retuned_planner(opened, prior_weight, opening)  # what python -m run.pretrained writes
        assert (played.prior_weight, played.opening) == (entry["prior_weight"], entry.get("opening")) == expected
    for prior_weight, opening, message in [(-1.0, None, "prior weight -1.0"), (None, -2, "opening -2")]:
        with pytest.raises(ValueError, match=message):
            carried.overridden(prior_weight, opening)
        with pytest.raises(ValueError, match=message):
            retuned_planner(opened, prior_weight, opening)
