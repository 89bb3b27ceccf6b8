"""ablate.py on tiny budgets: every file with the right rows, and a killed sweep resumes."""
import csv
import json
import os
import re

import pytest

import ablate
from tests.helpers import SMOKE, shared_local_ray

ARGS = ["--heads", "1", "2", "--seeds", "2", "--config", str(SMOKE), "--episodes", "2",
        "ppo.total_timesteps=64"]


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    shared_local_ray()  # each ablate.main below runs on it, as on a cluster given by --address
    out = tmp_path_factory.mktemp("ablation")
    assert ablate.main([*ARGS, "--out", str(out)]) == 0
    return out


def test_a_2x2_sweep_writes_every_file_with_the_right_rows(sweep):
    for name in ("results.csv", "results.md", "learning_curves.png", "travel_to_complete.png",
                 "ratio_to_nearest_frontier.png"):
        assert (sweep / name).stat().st_size > 0, name
    rows = list(csv.DictReader(open(sweep / "results.csv")))
    assert sorted((r["label"], r["seed"]) for r in rows) == [
        ("model.n_heads=1", "1"), ("model.n_heads=1", "2"), ("model.n_heads=2", "1"), ("model.n_heads=2", "2")]
    assert len({r["parameters"] for r in rows}) == 1  # heads split the same embedding
    table = (sweep / "results.md").read_text()
    assert "Budget: 64 env steps per run, 2 seeds" in table
    assert [line.split(" | ")[0] for line in table.splitlines() if line.startswith("| model.n_heads=")] == [
        "| model.n_heads=1", "| model.n_heads=2", "| model.n_heads=2", "| model.n_heads=2"
    ]  # 2 settings, then 1 pair over seeds and the same pair map by map
    over_seeds, per_map = table.split("Over seeds:")[1].split("Paired per map:")
    # the pair over seeds: a difference (or n/a when no run completed a map) and the runs behind each side
    assert re.search(r"\| model\.n_heads=2 \| model\.n_heads=1 \| (n/a|[+-]\d\.\d{3}[^|]*) \| \d, \d \|", over_seeds)
    assert "| model.n_heads=2 | model.n_heads=1 |" in per_map  # the later setting's travel over the earlier's


def test_each_run_keeps_its_episodes_for_a_paired_comparison(sweep, capsys):
    import compare
    from evaluation.ablation_run import EVALUATION
    from evaluation.comparison import load_report

    reports = sorted(sweep.glob(f"*/{EVALUATION}"))
    assert len(reports) == 4
    runs = list(csv.DictReader(open(sweep / "results.csv")))
    for path in reports:
        report = load_report(path)
        assert set(report.episodes) == {"agent", "nearest_frontier", "greedy"}
        assert all(len(episodes) == 2 for episodes in report.episodes.values())
        row = next(r for r in runs if r["run_dir"] == str(path.parent))
        ratio_to_greedy = json.loads(path.read_text())["travel_ratio_to_greedy"]["agent"]
        assert float(row["ratio_to_greedy"]) == pytest.approx(ratio_to_greedy[0], nan_ok=True)
    # Two seeds of one head count pooled per map against the other's: compare.py reads them as they are.
    heads1, heads2 = ([str(p) for p in reports if f"n_heads={h}_" in str(p)] for h in (1, 2))
    assert compare.main([*heads1, heads2[0], "--policy", "agent", "--reference", "agent"]) == 0
    assert "agent" in capsys.readouterr().out


def test_rerun_skips_finished_runs_and_resumes_a_killed_one(sweep, local_ray):
    finished = sweep / "model.n_heads=1_seed1"
    killed = sweep / "model.n_heads=2_seed2"
    stamp = (finished / "result.json").stat().st_mtime_ns
    checkpoints = sorted(p.name for p in finished.glob("checkpoint_*.pt"))
    # A kill after the first update: the last checkpoint and the result never got written.
    (killed / "result.json").unlink()
    sorted(killed.glob("checkpoint_*.pt"))[-1].unlink()
    assert ablate.main([*ARGS, "--out", str(sweep)]) == 0
    assert (finished / "result.json").stat().st_mtime_ns == stamp
    assert sorted(p.name for p in finished.glob("checkpoint_*.pt")) == checkpoints
    assert (killed / "result.json").exists()
    assert sorted(p.name for p in killed.glob("checkpoint_*.pt")) == ["checkpoint_000001.pt", "checkpoint_000002.pt"]


def test_a_bad_sweep_key_or_env_setting_is_named_before_any_run(capsys, tmp_path):
    assert ablate.main(["--sweep", "model.n_head=1,2", "--config", str(SMOKE), "--out", str(tmp_path / "a")]) == 2
    assert "unknown key 'model.n_head'" in capsys.readouterr().err
    assert ablate.main(["--sweep", "env.kwargs.sensor_range=6,1000", "--config", str(SMOKE),
                        "--out", str(tmp_path / "b")]) == 2
    assert "sensor_range must be <= 64, got 1000" in capsys.readouterr().err
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_a_rerun_with_other_settings_is_refused_naming_them_and_other_evaluations_rerun(sweep, capsys, local_ray):
    finished = sweep / "model.n_heads=1_seed1"
    before = {p.name: p.stat().st_mtime_ns for p in sweep.rglob("*") if p.is_file()}
    assert ablate.main([*ARGS[:-1], "ppo.total_timesteps=128", "--out", str(sweep)]) == 2
    error = capsys.readouterr().err
    assert "model.n_heads=1_seed1 holds a run made with other settings" in error
    assert "ppo.total_timesteps: 64 there, 128 asked" in error
    assert {p.name: p.stat().st_mtime_ns for p in sweep.rglob("*") if p.is_file()} == before  # nothing written

    # Other evaluation settings reuse the training and evaluate it again: the checkpoints stay.
    checkpoints = {p.name: p.stat().st_mtime_ns for p in finished.glob("checkpoint_*.pt")}
    assert ablate.main([*ARGS, "--out", str(sweep), "--episodes", "3"]) == 0  # the last --episodes counts
    assert json.loads((finished / "result.json").read_text())["evaluation"] == {"episodes": 3, "eval_seed": 0}
    assert {p.name: p.stat().st_mtime_ns for p in finished.glob("checkpoint_*.pt")} == checkpoints
    assert "3 held-out episodes" in (sweep / "results.md").read_text()


def test_a_result_recorded_before_a_curve_was_kept_is_evaluated_again_not_retrained(sweep, local_ray):
    finished = sweep / "model.n_heads=1_seed1"
    result = json.loads((finished / "result.json").read_text())
    steps, travel = result["curves"]["travel"]
    assert len(steps) == len(travel) == len(result["curves"]["coverage"][0]) > 0
    del result["curves"]["travel"]  # as an older version wrote it
    (finished / "result.json").write_text(json.dumps(result))
    checkpoints = {p.name: p.stat().st_mtime_ns for p in finished.glob("checkpoint_*.pt")}
    args = [*ARGS, "--out", str(sweep), "--episodes", str(result["evaluation"]["episodes"])]  # as the sweep has them
    assert ablate.main([*args, "--report"]) == 0  # counted as unfinished meanwhile
    assert "3 of the 4 runs finished so far" in (sweep / "results.md").read_text()
    assert ablate.main(args) == 0
    assert json.loads((finished / "result.json").read_text())["curves"]["travel"] == [steps, travel]
    assert {p.name: p.stat().st_mtime_ns for p in finished.glob("checkpoint_*.pt")} == checkpoints


def copy_of_sweep(sweep, folder):
    """A copy of the module's finished sweep in ``folder``, its results naming their runs there, and
    the ``--episodes`` its runs were last evaluated with (a test above evaluates them again with more)."""
    import shutil

    copy = shutil.copytree(sweep, folder)
    for run in copy.glob("*_seed*"):
        result = json.loads((sweep / run.name / "result.json").read_text())
        (run / "result.json").write_text(json.dumps({**result, "run_dir": str(run)}))
    return copy, json.loads((copy / "model.n_heads=1_seed1" / "result.json").read_text())["evaluation"]["episodes"]


def test_a_moved_sweep_reports_and_resumes_in_its_new_folder(sweep, tmp_path, local_ray):
    import shutil

    original, episodes = copy_of_sweep(sweep, tmp_path / "original")  # results.json hold this folder's paths...
    moved = shutil.move(original, tmp_path / "elsewhere")  # ...which no longer exists
    args = [*ARGS, "--out", str(moved), "--episodes", str(episodes)]
    assert ablate.main([*args, "--report"]) == 0
    assert {row["run_dir"] for row in csv.DictReader(open(moved / "results.csv"))} == {
        str(moved / name) for name in ("model.n_heads=1_seed1", "model.n_heads=1_seed2", "model.n_heads=2_seed1",
                                       "model.n_heads=2_seed2")}
    assert re.search(r"\| model\.n_heads=2 \| model\.n_heads=1 \| (n/a|[\d.]+[^|]*) \| \d \| \d \| \d \| \d \|",
                     (moved / "results.md").read_text())  # the pair map by map, from the runs where they are now

    (moved / "model.n_heads=2_seed2" / "result.json").unlink()  # as if stopped before its evaluation
    assert ablate.main(args) == 0
    assert json.loads((moved / "model.n_heads=2_seed2" / "result.json").read_text())["run_dir"] == str(
        moved / "model.n_heads=2_seed2")
    assert not original.exists()  # nothing written where the sweep was


def test_ctrl_c_stops_the_sweep_without_a_traceback_and_the_rerun_finishes_it(tmp_path, local_ray):
    """Ctrl-C reaches the terminal's whole process group (``kill PID``, SIGTERM to the driver only:
    the next test)."""
    import signal
    import subprocess
    import sys
    import time

    from tests.helpers import ROOT

    out = tmp_path / "sweep"
    command = [sys.executable, "ablate.py", "--heads", "1", "--seeds", "1", "--config", str(SMOKE), "--episodes", "1",
               "--out", str(out), "ppo.total_timesteps=320", "run.checkpoint_every=1"]  # 10 updates
    # A suite started as a background job (`cmd &` in a script) ignores SIGINT, and a child inherits
    # that: ablate.py would then rightly ignore Ctrl-C. Start it as a terminal's foreground job.
    disposition = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   start_new_session=True)  # its own group, as a terminal's Ctrl-C reaches it
    finally:
        signal.signal(signal.SIGINT, disposition)
    deadline = time.time() + 120
    while not list(out.glob("*/checkpoint_*.pt")) and time.time() < deadline:  # a run under way
        time.sleep(0.2)
    assert list(out.glob("*/checkpoint_*.pt")), "no run started"
    os.killpg(process.pid, signal.SIGINT)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 130, err
    assert "Traceback" not in err and "rerun the same command to continue the sweep" in err
    assert not list(out.glob("*/result.json"))
    assert ablate.main(command[2:]) == 0  # the same command resumes the run and finishes it
    assert len(list(out.glob("*/result.json"))) == 1


def test_a_run_stopped_by_a_signal_is_not_evaluated_and_the_next_call_resumes_it(tmp_path, monkeypatch):
    """A worker's training stopped early must not be recorded as finished: the sweep would skip it.
    The signal lands in the third rollout's collection; the run keeps update 3, which no schedule
    saves, and the next call ends with the weights of a run never stopped."""
    import signal

    import torch

    from evaluation.ablation_run import EVALUATION, RESULT, RunSpec, RunStoppedError, run_one
    from learning.worker_processes import ProcessCollector
    from run.checkpoint import checkpoint_path, latest_checkpoint, load_checkpoint

    def spec(run_dir):
        return RunSpec(label="model.n_heads=1", overrides=("model.n_heads=1", "ppo.total_timesteps=320",
                                                           "run.checkpoint_every=4"),
                       seed=1, run_dir=str(run_dir), config_path=str(SMOKE), episodes=1, eval_seed=0, torch_threads=1)

    run_one(spec(tmp_path / "straight"))
    original, calls = ProcessCollector.collect, []

    def collect(self, policy):
        calls.append(None)
        if len(calls) == 3:
            signal.raise_signal(signal.SIGTERM)  # handled in the main thread, by the trainer
        return original(self, policy)

    monkeypatch.setattr(ProcessCollector, "collect", collect)
    run_dir = tmp_path / "run"
    with pytest.raises(RunStoppedError) as stop:
        run_one(spec(run_dir))
    monkeypatch.undo()
    assert str(stop.value) == (f"stopped by SIGTERM after update 3; its checkpoint is {checkpoint_path(run_dir, 3)} "
                               f"(of 10); the next sweep resumes it")
    assert latest_checkpoint(run_dir) == checkpoint_path(run_dir, 3)
    assert not (run_dir / RESULT).exists() and not (run_dir / EVALUATION).exists()
    result = run_one(spec(run_dir))  # resumes from that checkpoint and finishes
    assert result["label"] == "model.n_heads=1" and (run_dir / RESULT).exists()
    final, straight = (load_checkpoint(latest_checkpoint(d)) for d in (run_dir, tmp_path / "straight"))
    assert final["update"] == straight["update"] == 10
    assert all(torch.equal(final["model"][k], straight["model"][k]) for k in straight["model"])


def test_report_writes_the_finished_runs_and_starts_nothing(sweep, tmp_path, capsys, local_ray):
    import shutil

    ray = local_ray
    partial, episodes = copy_of_sweep(sweep, tmp_path / "partial")
    args = [*ARGS, "--out", str(partial), "--episodes", str(episodes)]
    shutil.rmtree(partial / "model.n_heads=1_seed2")  # never started
    unfinished = partial / "model.n_heads=2_seed2"
    (unfinished / "result.json").unlink()  # trained, as if killed before its evaluation
    ray.shutdown()  # so that the check below sees whether --report starts Ray
    before = {p.name: p.stat().st_mtime_ns for p in unfinished.iterdir()}
    assert ablate.main([*args, "--report"]) == 0
    assert not ray.is_initialized()
    assert {p.name: p.stat().st_mtime_ns for p in unfinished.iterdir()} == before  # not trained, not evaluated
    rows = list(csv.DictReader(open(partial / "results.csv")))
    assert sorted((r["label"], r["seed"]) for r in rows) == [("model.n_heads=1", "1"), ("model.n_heads=2", "1")]
    table = (partial / "results.md").read_text()
    assert f"2 seeds, {episodes} held-out episodes; 2 of the 4 runs finished so far." in table
    assert "| model.n_heads=2 | model.n_heads=1 |" in table  # the paired table over what is there

    for run in partial.glob("*/result.json"):
        run.unlink()
    assert ablate.main([*args, "--report"]) == 1
    assert "none of the 4 runs in" in capsys.readouterr().err


def test_a_stopped_sweep_saves_each_running_run_before_it_ends(tmp_path):
    """``kill PID`` (SIGTERM to the driver only). With checkpoints due only every 1,000 updates, only
    the stop itself can leave one."""
    import subprocess
    import sys
    import time

    from run.checkpoint import latest_checkpoint, load_checkpoint
    from tests.helpers import ROOT

    out = tmp_path / "sweep"
    command = [sys.executable, "ablate.py", "--heads", "1", "--seeds", "1", "--config", str(SMOKE), "--episodes", "1",
               "--out", str(out), "ppo.total_timesteps=100000", "run.checkpoint_every=1000", "run.image_every=0"]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    run_dir = out / "model.n_heads=1_seed1"
    deadline = time.time() + 120
    while not list(run_dir.glob("events.*")) and time.time() < deadline:  # training under way
        time.sleep(0.2)
    time.sleep(3)
    process.terminate()
    _, err = process.communicate(timeout=300)
    assert process.returncode == 130, err
    assert "each run finishes its update and saves a checkpoint" in err
    assert "Traceback" not in err and "rerun the same command to continue the sweep" in err
    checkpoint = latest_checkpoint(run_dir)
    assert checkpoint is not None, err
    assert 0 < load_checkpoint(checkpoint)["update"] < 3125
    assert not (run_dir / "result.json").exists()


def test_which_collector_or_a_retired_update_split_made_a_run_does_not_make_it_stale(tmp_path):
    from config import load_config, save_config
    from evaluation.ablation_run import RunSpec, StaleRunError, check_reusable, spec_config

    spec = RunSpec(label="l", overrides=(), seed=1, run_dir=str(tmp_path), config_path=str(SMOKE), episodes=1,
                   eval_seed=0, torch_threads=1)
    asked = spec_config(spec)
    assert (asked.env.vector, asked.env.workers) == ("processes", 1)  # one rollout worker per CPU of the run
    made = ["seed=1", f"run.run_dir={tmp_path}", "run.image_every=0"]
    save_config(load_config(SMOKE, [*made, "env.vector=sync", "env.workers=2"]), tmp_path / "config.yaml")
    check_reusable(tmp_path, asked)  # the same rollouts, bit for bit: the run is still this one
    config_yaml = tmp_path / "config.yaml"
    config_yaml.write_text(config_yaml.read_text().replace("ppo:\n", "ppo:\n  update_threads: 2\n"))
    check_reusable(tmp_path, asked)  # a run made with the retired update split: only float sums' order differed
    save_config(load_config(SMOKE, [*made, "env.forward_group=2"]), tmp_path / "config.yaml")
    with pytest.raises(StaleRunError, match="env.forward_group: 2 there, 1 asked"):
        check_reusable(tmp_path, asked)
