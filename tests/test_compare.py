"""compare.py: two evaluate.py --json reports compared map by map."""
import json
import re
import statistics

import pytest

import compare
import evaluate

ENV = {"id": "GridExplore-v0", "kwargs": {"map_size": 16}, "num_envs": 1, "vector": "sync"}


def episode(success: bool, travel: float, family: str = "rooms") -> dict:
    return {"success": success, "coverage": 1.0 if success else 0.5, "steps": 10, "travel_distance": travel,
            "episodic_return": 0.0, "map_family": family}


def write_report(path, per_episode: dict, seed: int = 0, env: dict = ENV):
    path.write_text(json.dumps({"episodes": 4, "seed": seed, "env": env, "per_episode": per_episode}))
    return path


def run(capsys, *argv) -> str:
    assert compare.main([str(a) for a in argv]) == 0
    return capsys.readouterr().out


def refused(capsys, *argv) -> str:
    with pytest.raises(SystemExit) as exit_info:
        compare.main([str(a) for a in argv])
    assert exit_info.value.code == 2
    return capsys.readouterr().err


def test_ratio_and_counts_are_per_map_over_the_maps_both_completed(tmp_path, capsys):
    new = write_report(tmp_path / "new.json", {"agent": [episode(True, 100), episode(True, 90), episode(False, 50),
                                                         episode(True, 80), episode(True, 30)]})
    base = write_report(tmp_path / "base.json", {"greedy": [episode(True, 100), episode(True, 100),
                                                           episode(True, 60), episode(True, 40)]})
    out = run(capsys, new, base).splitlines()
    # Map 2 the agent did not complete, map 4 only the agent ran: ratios 100/100, 90/100, 80/40.
    ratios = [1.0, 0.9, 2.0]
    half = 4.303 * statistics.stdev(ratios) / 3**0.5  # Student's t, 2 degrees of freedom
    assert out[0] == "4 shared held-out maps (--seed 0)"
    assert out[3] == f"| agent | greedy | {statistics.mean(ratios):.3f} ± {half:.3f} | 1 | 1 | 1 | 3 |"


def test_a_single_shared_map_has_no_interval(tmp_path, capsys):
    new = write_report(tmp_path / "new.json", {"agent": [episode(True, 90)]})
    base = write_report(tmp_path / "base.json", {"greedy": [episode(True, 100)]})
    assert run(capsys, new, base).splitlines()[3] == "| agent | greedy | 0.900 (no interval) | 1 | 0 | 0 | 1 |"


def test_every_policy_of_new_meets_every_policy_of_base_unless_narrowed(tmp_path, capsys):
    new = write_report(tmp_path / "new.json", {"a": [episode(True, 10)], "b": [episode(True, 20)]})
    base = write_report(tmp_path / "base.json", {"c": [episode(True, 10)], "d": [episode(False, 5)]})
    rows = [line.split(" | ")[:2] for line in run(capsys, new, base).splitlines()[3:-1]]
    assert rows == [["| a", "c"], ["| a", "d"], ["| b", "c"], ["| b", "d"]]
    assert run(capsys, new, base, "--policy", "b", "--reference", "d").splitlines()[3] == "| b | d | n/a | 0 | 0 | 0 | 0 |"
    assert "--reference: ['e'] not in" in refused(capsys, new, base, "--reference", "e")
    assert "it has ['c', 'd']" in refused(capsys, new, base, "--reference", "e")


def test_reports_of_other_maps_are_refused_naming_what_differs(tmp_path, capsys):
    new = write_report(tmp_path / "new.json", {"agent": [episode(True, 10), episode(True, 10, "maze")]})
    other_seed = write_report(tmp_path / "seed1.json", {"greedy": [episode(True, 10)]}, seed=1)
    assert "--seed 0 against --seed 1" in refused(capsys, new, other_seed)
    other_env = write_report(tmp_path / "big.json", {"greedy": [episode(True, 10)]},
                             env={**ENV, "kwargs": {"map_size": 48}})
    assert "different environment settings: ['kwargs'] ([{'map_size': 16}] against [{'map_size': 48}])" in refused(
        capsys, new, other_env)
    other_family = write_report(tmp_path / "family.json", {"greedy": [episode(True, 10), episode(True, 10)]})
    assert "episode 1 is a maze map in one report and a rooms map in the other" in refused(capsys, new, other_family)
    not_a_report = tmp_path / "other.json"
    not_a_report.write_text('{"summaries": {}}')
    assert "not an evaluate.py --json report (KeyError" in refused(capsys, new, not_a_report)


def test_two_evaluate_runs_pair_as_one_run_does(tmp_path, capsys):
    """A policy evaluated alone, compared with another run's report, gives the ratio evaluate.py
    computes when both run together: the reports share their maps."""
    common = ["--episodes", "4", "--seed", "3", "--env", "map_size=16"]
    assert evaluate.main([*common, "--policy", "greedy", "--json", str(tmp_path / "greedy.json")]) == 0
    assert evaluate.main([*common, "--json", str(tmp_path / "all.json")]) == 0
    together = json.loads((tmp_path / "all.json").read_text())["travel_ratio_to_nearest_frontier"]["greedy"]
    capsys.readouterr()
    row = run(capsys, tmp_path / "greedy.json", tmp_path / "all.json", "--reference", "nearest_frontier").splitlines()[3]
    assert together[2] > 0
    assert row.startswith(f"| greedy | nearest_frontier | {together[0]:.3f} ± {together[1]:.3f} |")
    assert row.endswith(f"| {together[2]} |")


def test_several_new_reports_pool_each_maps_travel_before_the_ratio(tmp_path, capsys):
    run_a = write_report(tmp_path / "a.json", {"agent": [episode(True, 100), episode(True, 90), episode(True, 70)],
                                               "greedy": [episode(True, 1)] * 3})
    run_b = write_report(tmp_path / "b.json", {"agent": [episode(True, 80), episode(False, 50), episode(True, 50)]})
    base = write_report(tmp_path / "base.json", {"greedy": [episode(True, 100), episode(True, 100),
                                                           episode(True, 50)]})
    out = run(capsys, run_a, run_b, base).splitlines()
    # Map 1 counts as not completed (run b failed it); maps 0 and 2 pool to 90 and 60: ratios 0.9, 1.2.
    ratios = [0.9, 1.2]
    half = 12.706 * statistics.stdev(ratios) / 2**0.5  # Student's t, 1 degree of freedom
    assert out[:2] == ["3 shared held-out maps (--seed 0)", "new: each map's travel is the mean over 2 reports"]
    assert out[4] == f"| agent | greedy | {statistics.mean(ratios):.3f} ± {half:.3f} | 1 | 1 | 0 | 2 |"
    assert len(out) == 6  # only "agent" is in both new reports


def test_pooled_reports_must_share_maps_and_a_policy(tmp_path, capsys):
    run_a = write_report(tmp_path / "a.json", {"agent": [episode(True, 10)]})
    base = write_report(tmp_path / "base.json", {"greedy": [episode(True, 10)]})
    other_seed = write_report(tmp_path / "seed1.json", {"agent": [episode(True, 10)]}, seed=1)
    assert "--seed 0 against --seed 1" in refused(capsys, run_a, other_seed, base)
    other_policy = write_report(tmp_path / "other.json", {"random": [episode(True, 10)]})
    assert "share no policy: they have [['agent'], ['random']]" in refused(capsys, run_a, other_policy, base)
    assert f"got one report ({run_a}): give NEW.json [NEW.json ...] BASE.json" in refused(capsys, run_a)


def test_base_reports_given_with_base_pool_too(tmp_path, capsys):
    """Two settings, two seeds each, compared map by map: each side's travel is its mean over its reports."""
    new = [write_report(tmp_path / f"new{i}.json", {"agent": [episode(True, t) for t in travels]})
           for i, travels in enumerate([(90, 40, 60), (110, 60, 60)])]  # pooled: 100, 50, 60
    base = [write_report(tmp_path / f"base{i}.json", {"agent": [episode(True, t) for t in travels]})
            for i, travels in enumerate([(100, 100, 30), (100, 100, 30)])]  # pooled: 100, 100, 30
    out = run(capsys, *new, "--base", *base).splitlines()
    ratios = [1.0, 0.5, 2.0]
    half = 4.303 * statistics.stdev(ratios) / 3**0.5  # Student's t, 2 degrees of freedom
    assert out[:3] == ["3 shared held-out maps (--seed 0)", "new: each map's travel is the mean over 2 reports",
                       "base: each map's travel is the mean over 2 reports"]
    assert out[5] == f"| agent | agent | {statistics.mean(ratios):.3f} ± {half:.3f} | 1 | 1 | 1 | 3 |"
    # The usual form still reads the last report as BASE; a report on both sides is refused.
    assert "| agent | agent |" in run(capsys, *new, base[0])
    assert "given more than once" in refused(capsys, new[0], "--base", new[0], base[1])


def test_settings_that_do_not_shape_the_maps_do_not_block_a_comparison_and_bad_files_are_named(tmp_path, capsys):
    report = {"episodes": 1, "seed": 0, "summaries": {},
              "env": {"id": "GridExplore-v0", "kwargs": {"map_size": 16}, "num_envs": 8, "vector": "sync"},
              "per_episode": {"greedy": [{"success": True, "coverage": 1.0, "steps": 5, "travel_distance": 20.0,
                                          "episodic_return": 1.0, "map_family": "maze"}]}}
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(report))
    b.write_text(json.dumps({**report, "env": {**report["env"], "num_envs": 2, "vector": "async"}}))
    assert compare.main([str(a), str(b)]) == 0
    capsys.readouterr()
    empty, binary, no_episodes = tmp_path / "empty.json", tmp_path / "binary.json", tmp_path / "none.json"
    empty.write_text("")
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe")
    no_episodes.write_text(json.dumps({**report, "per_episode": {}}))
    for argv, message in (([str(empty), str(b)], r"empty.json: not an evaluate.py --json report \(an empty file\)"),
                          ([str(binary), str(b)], r"binary.json: not an evaluate.py --json report"),
                          ([str(no_episodes), str(b)], r"none.json: the report holds no episodes"),
                          ([str(a), str(a)], r"given more than once")):
        with pytest.raises(SystemExit):
            compare.main(argv)
        assert re.search(message, capsys.readouterr().err), message


def test_reports_over_a_map_folder_must_name_the_same_map_files(tmp_path, capsys):
    def on_files(names: list[str]) -> list[dict]:
        return [{**episode(True, 10 * (i + 1), "file"), "map_file": name} for i, name in enumerate(names)]

    env = {**ENV, "kwargs": {"map_dir": "maps"}}
    new = write_report(tmp_path / "new.json", {"agent": on_files(["1.png", "2.png", "10.png"])}, env=env)
    base = write_report(tmp_path / "base.json", {"greedy": on_files(["1.png", "2.png"])}, env=env)
    assert run(capsys, new, base).startswith("2 shared held-out maps")
    changed = write_report(tmp_path / "changed.json", {"greedy": on_files(["1.png", "3.png"])}, env=env)
    assert "episode 1 plays map file '2.png' in one report and '3.png' in the other: not the same maps" in refused(
        capsys, new, changed)
    older = write_report(tmp_path / "older.json", {"agent": [episode(True, 10, "file")] * 2}, env=env)  # no map_file
    assert run(capsys, older, base).startswith("2 shared held-out maps")
    assert run(capsys, new, older, base).startswith("2 shared held-out maps")  # pooled with a report of either kind


def test_reports_of_later_maps_are_not_paired_with_the_first_ones(tmp_path, capsys):
    """A bench run split by --first-episode records where it starts: on procedural maps no file
    name would tell that episode 0 of one is episode 2 of the held-out maps."""
    from config import EnvConfig
    from env.baselines import BASELINES
    from evaluation.play import evaluate_actors, evaluation_report

    env = EnvConfig(kwargs={"map_size": 16, "max_steps": 40})
    reports = {}
    for first in (0, 2):
        results = evaluate_actors({"greedy": BASELINES["greedy"]}, env, 2, seed=0, progress=False, first_episode=first)
        reports[first] = tmp_path / f"from_{first}.json"
        reports[first].write_text(json.dumps(evaluation_report(results, 2, 0, env, first_episode=first)))
    assert json.loads(reports[2].read_text())["first_episode"] == 2
    assert "start at different held-out episodes, 2 against 0: not the same maps" in refused(capsys, reports[2], reports[0])
    older = json.loads(reports[0].read_text())
    del older["first_episode"]  # as reports written before it was recorded: from episode 0
    (tmp_path / "older.json").write_text(json.dumps(older))
    assert "2 shared held-out maps" in run(capsys, tmp_path / "older.json", reports[0])
    assert "start at different held-out episodes, 0 against 2" in refused(capsys, tmp_path / "older.json", reports[2])


def test_join_puts_the_parts_of_a_split_run_end_to_end(tmp_path, capsys):
    from config import EnvConfig
    from env.baselines import BASELINES
    from evaluation.play import evaluate_actors, evaluation_report

    env = EnvConfig(kwargs={"map_size": 16, "max_steps": 40})
    actors = {name: BASELINES[name] for name in ("nearest_frontier", "greedy")}

    def part(name, first, n):
        results = evaluate_actors(actors, env, n, seed=0, progress=False, first_episode=first)
        (tmp_path / name).write_text(json.dumps(evaluation_report(results, n, 0, env, first_episode=first)))
        return tmp_path / name

    whole, early, late, later = part("whole.json", 0, 4), part("0.json", 0, 2), part("2.json", 2, 2), part("3.json", 3, 1)
    out = run(capsys, late, early, "--base", whole, "--join", "--policy", "greedy", "--reference", "greedy")
    assert out.splitlines()[:2] == ["4 shared held-out maps (--seed 0)", "new: 2 reports joined, maps 0-3"]
    assert "| greedy | greedy | 1.000 ± 0.000 | 0 | 0 | 4 | 4 |" in out  # the same four maps, in order
    err = refused(capsys, early, later, "--base", whole, "--join")
    assert "3.json starts at held-out episode 3 where the parts before it end at 2" in err
    err = refused(capsys, early, late, "--base", whole)  # pooled, parts of other maps are refused
    assert "not the same maps" in err
