"""evaluate.py's table, from hand-made summaries, and its runs over a map folder (its other end-to-end
runs are in tests/learning/test_train.py)."""
import json
import re
import signal
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

import evaluate
import visualize
from env.baselines import BASELINES
from env.episode import EpisodeResult
from evaluate import format_table
from evaluation.play import summarise, travel_ratio
from learning.trainer import Trainer
from planner.files import planner_entry
from planner.predictor import MapPredictor
from planner.predictor_files import predictor_file
from run.pretrained import export
from tests.helpers import SMOKE, agent_without_planner, free_everywhere_predictor, smoke_config
from tests.map_folders import MAP_ORDER, write_maps


def episode(success: bool, travel: float) -> EpisodeResult:
    return EpisodeResult(success=success, coverage=1.0 if success else 0.4, steps=12, travel_distance=travel,
                         episodic_return=0.0)


def test_table_rows_hold_means_intervals_and_ratios_and_say_na_for_nothing_to_average():
    results = {"greedy": [episode(True, 100.0), episode(True, 200.0)],
               "random": [episode(False, 900.0), episode(False, 800.0)]}
    summaries = {name: summarise(r) for name, r in results.items()}
    ratios = {"greedy": {"random": travel_ratio(results["random"], results["greedy"])}}
    lines = format_table(summaries, ratios).splitlines()
    assert lines[0] == ("| policy | success rate | coverage at end | steps to complete | travel to complete "
                        "| travel / greedy |")
    # 150 ± 12.706 * std(100, 200) / sqrt(2) = 150 ± 635.3
    assert lines[2] == "| greedy | 1.000 ± 0.000 | 1.000 ± 0.000 | 12.0 ± 0.0 | 150.0 ± 635.3 | 1 (reference) |"
    assert lines[3] == "| random | 0.000 ± 0.000 | 0.400 ± 0.000 | n/a | n/a | n/a (n=0) |"


def test_one_map_gives_its_values_without_an_interval_never_plus_minus_zero():
    results = {"greedy": [episode(True, 100.0)], "agent": [episode(True, 90.0)]}
    summaries = {name: summarise(r) for name, r in results.items()}
    ratios = {"greedy": {"agent": travel_ratio(results["agent"], results["greedy"])}}
    lines = format_table(summaries, ratios).splitlines()
    assert lines[3] == ("| agent (argmax) | 1.000 (no interval) | 1.000 (no interval) | 12.0 (no interval) "
                        "| 90.0 (no interval) | 0.900 (no interval) (n=1) |")


def test_output_paths_and_seeds_are_checked_before_any_episode(tmp_path, capsys, monkeypatch):
    def no_episodes(*args, **kwargs):
        raise AssertionError("an episode ran before the arguments were checked")

    monkeypatch.setattr(evaluate, "evaluate_actors", no_episodes)
    monkeypatch.setattr(visualize, "record_episode", no_episodes)
    (tmp_path / "a_file").write_text("")
    plain = str(agent_without_planner(tmp_path / "agent.pt"))
    cases = [
        (evaluate.main, ["--policy", "greedy", "--json", str(tmp_path / "missing" / "r.json")], None),
        (evaluate.main, ["--policy", "greedy", "--json", str(tmp_path)], "--json: .* is a folder"),
        (evaluate.main, ["--policy", "greedy", "--gif", str(tmp_path / "a_file" / "x.gif")], "--gif: cannot write"),
        (evaluate.main, ["--policy", "greedy", "--seed", "-1"], "--seed must be >= 0, got -1"),
        (evaluate.main, ["--planner", str(tmp_path / "p.pt")], "--planner needs --checkpoint"),
        (evaluate.main, ["--policy", "planner", "--checkpoint", plain],
         "carries no map predictor; name one with --planner"),
        (evaluate.main, ["--policy", "planner"], "--policy planner needs --checkpoint"),
        (evaluate.main, ["--opening", "4"], "--opening needs --checkpoint"),
        (evaluate.main, ["--checkpoint", plain, "--opening", "4"], "--opening: there is no planner to set"),
        (evaluate.main, ["--checkpoint", plain, "--prior-weight", "1"], "--prior-weight: there is no planner to set"),
        (evaluate.main, ["--checkpoint", "pretrained/default.pt", "--planner", str(tmp_path / "p.pt"),
                         "--opening", "-1"], "--opening must be >= 0 .0: not opened., got -1"),
        (evaluate.main, ["--checkpoint", "pretrained/default.pt", "--planner", str(tmp_path / "p.pt"),
                         "--prior-weight", "-1"], "--prior-weight must be >= 0, got -1.0"),
        (evaluate.main, ["--checkpoint", "pretrained/default.pt", "--planner", str(tmp_path / "p.pt")],
         "--planner: no map predictor file at"),
        (evaluate.main, ["--checkpoint", "pretrained/default.pt", "--planner", str(tmp_path / "a_file")],
         "--planner: .* does not load as a map predictor file"),
        (visualize.main, ["--checkpoint", str(tmp_path), "--fps", "0"], "--fps must be a finite number > 0, got 0.0"),
        (visualize.main, ["--checkpoint", str(tmp_path), "--query", "-2"], "--query must be >= 0, got -2"),
        (visualize.main, ["--checkpoint", str(tmp_path), "--out", str(tmp_path / "a_file")], "--out: .* is a file"),
    ]
    for main, argv, message in cases:
        if message is None:  # a folder that does not exist yet is made when writing: not an error
            with pytest.raises(AssertionError, match="an episode ran"):
                main(argv)
            continue
        with pytest.raises(SystemExit) as exit_code:
            main(argv)
        assert exit_code.value.code == 2
        assert re.search(message, capsys.readouterr().err), message


@pytest.fixture
def untrained_run(tmp_path):
    """A run folder with one checkpoint of the smoke config's network, before any update."""
    run_dir = tmp_path / "run"
    trainer = Trainer.create(smoke_config(run_dir, "run.image_every=0"), run_dir)
    trainer.save()
    trainer.close()
    return run_dir


@pytest.mark.parametrize("episodes, maps", [(10, MAP_ORDER), (2, MAP_ORDER[:2])])
def test_a_map_folder_is_evaluated_map_by_map_in_sorted_order(untrained_run, tmp_path, capsys, episodes, maps):
    out = tmp_path / "eval.json"
    argv = ["--checkpoint", str(untrained_run), "--env", f"map_dir={write_maps(tmp_path / 'maps')}",
            "--episodes", str(episodes), "--json", str(out)]
    assert evaluate.main(argv) == 0
    capped = "--episodes 10: map_dir='.*maps' holds 4 maps; evaluating each once \\(4 episodes\\)"
    assert bool(re.search(capped, capsys.readouterr().err)) == (episodes > 4)
    report = json.loads(out.read_text())
    assert report["episodes"] == len(maps)
    assert {name: [e["map_file"] for e in results] for name, results in report["per_episode"].items()} == \
        {name: maps for name in ("agent", "random", "nearest_frontier", "greedy")}


def test_a_part_of_a_map_folder_starts_at_its_map(tmp_path, capsys):
    folder = write_maps(tmp_path / "maps")
    argv = ["--policy", "greedy", "--config", str(SMOKE), "--env", f"map_dir={folder}", "--json", str(tmp_path / "r.json")]
    assert evaluate.main([*argv, "--first-episode", "1", "--episodes", "10"]) == 0
    assert "holds 4 maps; evaluating each once from map 1 (3 episodes)" in capsys.readouterr().err
    report = json.loads((tmp_path / "r.json").read_text())
    assert [e["map_file"] for e in report["per_episode"]["greedy"]] == MAP_ORDER[1:]
    with pytest.raises(SystemExit):
        evaluate.main([*argv, "--first-episode", "4"])
    assert "--first-episode 4: map_dir=" in (err := capsys.readouterr().err) and "holds 4 maps (0-3)" in err


@pytest.mark.parametrize("split", ["train", "validation", "all"])
def test_an_evaluation_on_a_folders_training_part_says_so(tmp_path, capsys, split):
    folder = write_maps(tmp_path / "maps", {f"{i}.png": (12, 12) for i in range(30)})  # both parts hold maps
    argv = ["--policy", "greedy", "--config", str(SMOKE), "--episodes", "1", "--env", f"map_dir={folder}",
            "--env", f"map_split={split}"]
    assert evaluate.main(argv) == 0
    said = "map_split='train': playing the part of map_dir=" in capsys.readouterr().err
    assert said == (split == "train")


def test_policy_takes_several_names_and_plays_them_in_the_usual_order(tmp_path, capsys):
    out = tmp_path / "two.json"
    argv = ["--policy", "greedy", "nearest_frontier", "--config", str(SMOKE), "--episodes", "2", "--json", str(out)]
    assert evaluate.main(argv) == 0
    report = json.loads(out.read_text())
    assert list(report["per_episode"]) == ["nearest_frontier", "greedy"]  # the table's order, as --policy all plays
    assert report["travel_ratio_to_greedy"]["nearest_frontier"][2] == 2
    assert report["cycles_broken"] == {name: {"cycles": 0, "maps": 0} for name in ("nearest_frontier", "greedy")}
    assert "cycles broken (a policy back in an exact state" in capsys.readouterr().out  # and where: none
    with pytest.raises(SystemExit):
        evaluate.main(["--policy", "all", "greedy", "--config", str(SMOKE)])
    assert "--policy all greedy: 'all' or a list of policies, not both" in capsys.readouterr().err


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=lambda s: s.name)
def test_a_signal_stops_after_the_map_in_play_and_reports_the_maps_finished(tmp_path, capsys, monkeypatch, sig):
    whole, stopped = tmp_path / "whole.json", tmp_path / "stopped.json"
    argv = ["--policy", "greedy", "--config", str(SMOKE), "--episodes", "5"]
    assert evaluate.main([*argv, "--json", str(whole)]) == 0
    episodes, greedy = [], BASELINES["greedy"]

    def greedy_then_a_signal(obs, env):
        episodes.append(env.steps == 0)
        if sum(episodes) == 2 and env.steps == 1:  # a real signal, in the second map's episode
            signal.raise_signal(sig)
        return greedy(obs, env)

    monkeypatch.setitem(evaluate.BASELINES, "greedy", greedy_then_a_signal)
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    assert evaluate.main([*argv, "--json", str(stopped)]) == 128 + sig  # the shell's code for the signal
    err = capsys.readouterr().err
    assert f"{sig.name}: finishing the map in play, then reporting the maps finished" in err
    assert f"stopped by {sig.name} after 2 of 5 maps: what follows covers those 2" in err
    whole, stopped = json.loads(whole.read_text()), json.loads(stopped.read_text())
    assert (whole["stopped_by"], stopped["stopped_by"], stopped["episodes"]) == (None, sig.name, 2)
    assert stopped["per_episode"]["greedy"] == whole["per_episode"]["greedy"][:2]
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before  # the handlers are put back
    monkeypatch.setitem(evaluate.BASELINES, "greedy", greedy)
    assert evaluate.main([*argv, "--json", str(tmp_path / "stopped.json"), "--resume"]) == 0  # maps 2-4 only
    assert "--resume: " + str(tmp_path / "stopped.json") + " holds maps 0-1; playing the rest" in capsys.readouterr().err
    assert json.loads((tmp_path / "stopped.json").read_text()) == whole  # the report a whole run writes, bit for bit


def test_resume_refuses_a_report_of_other_settings_and_leaves_a_whole_one_alone(tmp_path, capsys):
    report = tmp_path / "r.json"
    argv = ["--policy", "greedy", "--config", str(SMOKE), "--episodes", "3", "--json", str(report)]
    assert evaluate.main(argv) == 0
    written = report.read_text()
    assert evaluate.main([*argv, "--resume"]) == 0
    assert "--resume: " + str(report) + " already holds 3 maps; nothing to play" in capsys.readouterr().err
    assert report.read_text() == written
    refused = [(["--seed", "1"], "was made with other settings: seed 0 there, 1 now"),
               (["--policy", "nearest_frontier"], "policies ['greedy'] there, ['nearest_frontier'] now"),
               (["--env", "max_steps=60"], "env {"),
               (["--json", str(tmp_path / "none.json")], "none.json: no report to continue")]
    for change, said in refused:
        with pytest.raises(SystemExit):
            evaluate.main([*argv, "--resume", *change])
        assert "--resume: " in (err := capsys.readouterr().err) and said in err, err
    for argv_, said in ((["--resume"], "--resume needs --json REPORT"),
                        ([*argv, "--resume", "--gif", str(tmp_path / "a.gif")], "--gif: not with --resume")):
        with pytest.raises(SystemExit):
            evaluate.main(argv_)
        assert said in capsys.readouterr().err
    assert report.read_text() == written


def test_a_checkpoint_whose_map_folder_is_not_here_asks_for_it(tmp_path, capsys):
    asked = ("pretrained/dungeon.pt plays the maps of map_dir='DungeonMaps/train', not on this machine: name "
             "their folder with --env map_dir=PATH (the reference's floor plans")
    for main in (evaluate.main, visualize.main):  # the file names the folder it was trained on, not a path here
        with pytest.raises(SystemExit):
            main(["--checkpoint", "pretrained/dungeon.pt", "--out", str(tmp_path / "viz")] if main is visualize.main
                 else ["--checkpoint", "pretrained/dungeon.pt"])
        assert asked in capsys.readouterr().err
    with pytest.raises(SystemExit):  # a folder the user names is theirs to fix: the plain error
        evaluate.main(["--checkpoint", "pretrained/dungeon.pt", "--env", f"map_dir={tmp_path / 'nowhere'}"])
    err = capsys.readouterr().err
    assert "--env: " in err and "nowhere' is neither a folder nor a glob pattern" in err and asked not in err


def test_a_bad_map_in_the_folder_is_refused_before_any_episode(tmp_path, capsys, monkeypatch):
    def no_episodes(*args, **kwargs):
        raise AssertionError("an episode ran before the maps were checked")

    monkeypatch.setattr(evaluate, "evaluate_actors", no_episodes)
    folder = write_maps(tmp_path / "maps")
    Image.fromarray(np.arange(144, dtype=np.uint8).reshape(12, 12)).save(folder / "4.png")
    damaged = bytearray((folder / "4.png").read_bytes())
    damaged[-20] ^= 0xFF  # a byte of the pixel data: the header reads, the checksum does not match
    (folder / "4.png").write_bytes(bytes(damaged))
    with pytest.raises(SystemExit):
        evaluate.main(["--policy", "greedy", "--config", str(SMOKE), "--env", f"map_dir={folder}"])
    assert re.search(r"--env: .*4\.png: not a readable image", capsys.readouterr().err)


def test_the_planner_plays_beside_the_agent_and_is_the_agent_at_a_large_prior_weight(tmp_path, capsys):
    predictor = tmp_path / "predictor.pt"
    torch.save(predictor_file(MapPredictor(width=4), {}), predictor)
    common = ["--checkpoint", "pretrained/default.pt", "--planner", str(predictor), "--episodes", "2",
              "--env", "map_size=16"]
    assert evaluate.main([*common, "--json", str(tmp_path / "r.json")]) == 0
    table = capsys.readouterr().out
    assert "| planner |" in table and "| agent (argmax) |" in table
    report = json.loads((tmp_path / "r.json").read_text())
    assert len(report["per_episode"]["planner"]) == 2
    evaluate.main([*common, "--prior-weight", "1000", "--policy", "planner", "--json", str(tmp_path / "p.json")])
    planner = json.loads((tmp_path / "p.json").read_text())["per_episode"]["planner"]
    assert [r["travel_distance"] for r in planner] == [r["travel_distance"] for r in report["per_episode"]["agent"]]


def test_a_checkpoint_carrying_a_planner_plays_it_with_its_weight_unless_told_otherwise(tmp_path, capsys):
    predictor = tmp_path / "predictor.pt"
    torch.save(predictor_file(MapPredictor(width=4), {}), predictor)
    agent = tmp_path / "agent.pt"
    export(Path("pretrained/default.pt"), agent, planner=planner_entry(predictor, prior_weight=1000))
    common = ["--checkpoint", str(agent), "--episodes", "2", "--env", "map_size=16"]
    assert evaluate.main([*common, "--json", str(tmp_path / "r.json")]) == 0
    out = capsys.readouterr().out
    assert "| planner |" in out
    assert (f"planner: the lookahead in the guess of {agent}'s map predictor (not opened), against the agent's "
            f"log-probability weighed 1000") in out
    report = json.loads((tmp_path / "r.json").read_text())
    assert (report["checkpoint"], report["planner"]) == (str(agent), {"predictor": str(agent), "prior_weight": 1000,
                                                                      "opening": None})
    per_episode = report["per_episode"]
    travel = {name: [r["travel_distance"] for r in per_episode[name]] for name in ("agent", "planner")}
    assert travel["planner"] == travel["agent"]  # the carried weight, 1000: the agent's own moves
    evaluate.main([*common, "--policy", "planner", "--prior-weight", "0", "--json", str(tmp_path / "w0.json")])
    told = json.loads((tmp_path / "w0.json").read_text())
    assert told["planner"]["prior_weight"] == 0  # the weight it played with, not the file's
    lookahead = told["per_episode"]["planner"]
    assert [r["travel_distance"] for r in lookahead] != travel["agent"]  # --prior-weight 0: the lookahead alone



def test_opening_opens_a_named_predictors_guess_as_a_carried_opening_does(tmp_path):
    predictor = tmp_path / "predictor.pt"
    torch.save(predictor_file(free_everywhere_predictor(), {}), predictor)
    opened = tmp_path / "opened.pt"
    export(Path("pretrained/default.pt"), opened, planner=planner_entry(predictor, prior_weight=0.0, opening=6))
    common = ["--episodes", "2", "--seed", "1", "--policy", "planner", "--env", "map_size=16"]
    travel = {}
    for name, argv in [("carried", ["--checkpoint", str(opened)]),
                       ("named", ["--checkpoint", "pretrained/default.pt", "--planner", str(predictor),
                                  "--prior-weight", "0", "--opening", "6"]),
                       ("not opened", ["--checkpoint", str(opened), "--opening", "0"])]:
        assert evaluate.main([*common, *argv, "--json", str(tmp_path / "r.json")]) == 0
        travel[name] = [r["travel_distance"] for r in json.loads((tmp_path / "r.json").read_text())["per_episode"]["planner"]]
    assert travel["named"] == travel["carried"]
    assert travel["not opened"] != travel["carried"]


def test_first_episode_plays_a_part_that_joins_the_rest(tmp_path, capsys):
    """Maps 2-4 from --first-episode 2 are the whole run's maps 2-4 exactly, and compare.py joins
    the two parts into the whole; a resumed part keeps its start; bad starts are named."""
    import compare

    argv = ["--policy", "greedy", "--config", str(SMOKE)]
    whole, head, tail = tmp_path / "whole.json", tmp_path / "head.json", tmp_path / "tail.json"
    assert evaluate.main([*argv, "--episodes", "5", "--json", str(whole)]) == 0
    assert evaluate.main([*argv, "--episodes", "2", "--json", str(head)]) == 0
    assert evaluate.main([*argv, "--episodes", "3", "--first-episode", "2", "--json", str(tail)]) == 0
    whole_, tail_ = json.loads(whole.read_text()), json.loads(tail.read_text())
    assert tail_["first_episode"] == 2 and tail_["per_episode"]["greedy"] == whole_["per_episode"]["greedy"][2:]
    with pytest.raises(SystemExit):  # the tail resumed as if it started at map 0
        evaluate.main([*argv, "--episodes", "3", "--json", str(tail), "--resume"])
    assert "first_episode 2 there, 0 now" in capsys.readouterr().err
    assert evaluate.main([*argv, "--episodes", "3", "--first-episode", "2", "--json", str(tail), "--resume"]) == 0
    assert "already holds 3 maps" in capsys.readouterr().err
    capsys.readouterr()
    assert compare.main([str(head), str(tail), "--join", "--base", str(whole), "--policy", "greedy"]) == 0
    assert "1.000 ± 0.000" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        evaluate.main([*argv, "--first-episode", "-1"])
    assert "--first-episode must be >= 0, got -1" in capsys.readouterr().err
