"""Every speed benchmark runs end to end on tiny sizes (their figures live in docs/performance.md)."""
import importlib.util
import re
import signal

import pytest
import torch

from bench import (
    attention_speed,
    collector_speed,
    contention,
    device_parity,
    encoder_vs_torch,
    env_speed,
    forward_groups,
    planner_speed,
    train_speed,
)
from planner import actor as actor_module
from planner import lookahead as lookahead_module
from tests.helpers import ROOT, SMOKE, printed_by


@pytest.mark.parametrize("module, argv, expected", [
    (attention_speed, ["--batch", "2", "--nodes", "8", "--repeats", "1"], "sdpa x"),
    (env_speed, ["--seconds", "0.2"], "ratio (GreedyValue / bare)"),  # MiniGrid's line only where it is installed
    (contention, ["--config", str(SMOKE), "--updates", "1", "--settings", "PASSIVE", "--competitor", "libgomp",
                  "--seconds", "0.5"], "| PASSIVE |"),
    (contention, ["--config", str(SMOKE), "--updates", "1", "--alone-rounds", "1", "--settings", "THREADS=1"],
     "| THREADS=1 (steps/s) |"),
    (train_speed, ["--config", str(SMOKE), "--init-from", "", "--updates", "2", "--rounds", "1",
                   "--variant", "ppo.update_epochs=1"], "| ppo.update_epochs=1 |"),
    (forward_groups, ["--config", str(SMOKE), "--steps", "2", "--repeats", "1", "--groups", "1", "2"],
     "groups of 2: "),
    (encoder_vs_torch, ["--nodes", "8", "--batch", "2", "--rounds", "1", "--repeats", "1"], "ours / torch per round"),
    (encoder_vs_torch, ["--nodes", "8", "--batch", "2", "--rounds", "1", "--repeats", "1", "--profile"],
     "x torch (the ceiling)"),
])
def test_benchmark_prints_its_ratios(module, argv, expected, monkeypatch, capsys):
    assert expected in printed_by(module, argv, monkeypatch, capsys)


def test_collector_speed_rows_give_the_workers_their_transfer_and_spread(capsys):
    assert collector_speed.main(["--config", str(SMOKE), "--workers", "1", "--rounds", "1", "env.num_envs=2"]) == 0
    out = capsys.readouterr().out
    assert "env.num_envs=2: 2 envs x" in out  # the override reached the bench's config
    table = [[c.strip() for c in line.strip("|").split("|")] for line in out.splitlines() if line.startswith("| ")]
    rows = {cells[0]: cells[1:] for cells in table if cells[0].startswith(("in process", "processes", "ray"))}
    assert list(rows) == ["in process", "processes, 1 worker", "ray, 1 worker"]
    assert rows["in process"][1:3] == ["-", "-"]  # no workers: no transfer, no spread
    for name in ("processes, 1 worker", "ray, 1 worker"):
        rollout, transfer, spread = (float(x) for x in rows[name][:3])
        assert 0 <= transfer < rollout and spread == 0.0  # one worker: nothing to spread


def test_collector_speed_stopped_by_sigterm_closes_every_collector_and_prints_no_traceback(monkeypatch, capsys):
    from cluster.rollout_actors import RayCollector
    from learning.collector import VectorEnvCollector

    closed = []
    for cls in (VectorEnvCollector, RayCollector):
        def close(self, original=cls.close):
            closed.append(type(self).__name__)
            original(self)
        monkeypatch.setattr(cls, "close", close)
    monkeypatch.setattr(VectorEnvCollector, "collect", lambda self, policy: signal.raise_signal(signal.SIGTERM))
    assert collector_speed.main(["--config", str(SMOKE), "--workers", "1", "--rounds", "1"]) == 130
    assert sorted(closed) == ["RayCollector", "VectorEnvCollector"]
    out, err = capsys.readouterr()
    assert "collector_speed: stopped before its rounds ended; no figures" in err and "| collector |" not in out


def test_planner_speed_times_each_part_of_the_planners_move(capsys):
    """Every part's timer is wired to the function the planner calls (a timer around a name the
    planner no longer calls would read 0), and the parts with the rest make up the whole move."""
    assert planner_speed.main(["--episodes", "1", "--env", "map_size=16"]) == 0
    out = capsys.readouterr().out
    for policy in ("planner", "agent", "greedy"):
        assert re.search(rf"^\| {policy} \| [\d.]+ \| [\d.]+ \| \d+ \|$", out, re.MULTILINE), out
    parts = dict(re.findall(r"^\| (.+?) \| ([\d.]+) \| \d+% \|$", out, re.MULTILINE))
    assert len(parts) == len(planner_speed.PARTS) + 1
    assert all(float(parts[label]) > 0 for label in planner_speed.PARTS.values()), parts
    shares = [int(share) for share in re.findall(r"\| (\d+)% \|$", out, re.MULTILINE)]
    assert 97 <= sum(shares) <= 103  # each share rounded on its own


def test_explorer_speed_times_agent_and_planner_beside_evaluates_move(capsys):
    """A row per player, with the Explorer's decisions counted and the peer's time a move."""
    from bench import explorer_speed

    assert explorer_speed.main(["--checkpoint", "pretrained/default.pt", "--episodes", "1", "--env", "map_size=16"]) == 0
    out = capsys.readouterr().out
    for player in ("agent", "planner"):
        row = re.search(rf"^\| {player} \| ([\d.]+) \| ([\d.]+) \| (\d+) \| ([\d.]+) \| ([\d.]+) \|$", out, re.MULTILINE)
        assert row, out
        median, mean, decisions, peer, ratio = map(float, row.groups())
        assert decisions >= 2 and median > 0 and peer > 0 and ratio == pytest.approx(mean / peer, rel=0.05)  # each printed to 0.1 ms


def test_a_stopped_planner_speed_prints_no_figures_and_puts_every_function_back(monkeypatch, capsys):
    patched = (lookahead_module.imagined_world, lookahead_module.lookahead_costs, actor_module.forward_each)

    def interrupted(*args, **kwargs):
        assert lookahead_module.imagined_world is not patched[0]  # timed while the planner plays
        raise KeyboardInterrupt

    monkeypatch.setattr(planner_speed, "seconds_and_moves", interrupted)
    assert planner_speed.main(["--episodes", "1", "--env", "map_size=16"]) == 130
    out, err = capsys.readouterr()
    assert "stopped before its policies were timed; no figures" in err and "| planner |" not in out
    assert (lookahead_module.imagined_world, lookahead_module.lookahead_costs, actor_module.forward_each) == patched


def test_planner_speed_refuses_weights_without_a_planner(smoke_run, capsys):
    with pytest.raises(SystemExit):
        planner_speed.main(["--checkpoint", str(smoke_run)])
    assert "carries no planner (python -m planner.files --planner adds one)" in capsys.readouterr().err


def test_make_bench_runs_only_benchmarks_that_exist():
    """``make bench``'s ``python -m bench.X`` lines name modules of this folder (one renamed once
    left the target failing at its last line)."""
    makefile = (ROOT / "Makefile").read_text()
    target = re.search(r"^bench:.*\n((?:\t.*\n)+)", makefile, re.MULTILINE).group(1)
    modules = re.findall(r"-m (bench\.\w+)", target)
    assert len(modules) >= 4, target
    assert [m for m in modules if importlib.util.find_spec(m) is None] == []


def test_device_parity_needs_cuda_and_compares_each_setting_with_the_cpus_float32(monkeypatch, capsys):
    argv = ["--checkpoint", "pretrained/default.pt", "--states", "16", "--repeats", "1", "--env", "map_size=16"]
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert device_parity.main(argv) == 2 and "no CUDA device" in capsys.readouterr().err
    # the CPU standing in for the GPU: float32 must then match the reference exactly, bf16 must not
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda: "the CPU")
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    monkeypatch.setattr(torch.nn.Module, "cuda", lambda self: self)
    assert device_parity.main(argv) == 0
    lines = {line.split("  ")[0]: line for line in capsys.readouterr().out.splitlines()[1:]}
    assert set(lines) == {"cpu float32", "cpu bf16", "cuda float32", "cuda bf16"}
    assert "logits within 0.00e+00, values within 0.00e+00, gradient off by 0.00e+00" in lines["cuda float32"]
    assert "logits within 0.00e+00" not in lines["cuda bf16"]


def test_contention_settings_set_only_their_own_openmp_variables(monkeypatch):
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")  # the caller's own setting never leaks into a measured one
    monkeypatch.setenv("GOMP_SPINCOUNT", "5")
    wait = {setting: {k: v for k, v in contention.environment(setting).items() if k in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
            for setting in ("project", "libgomp", "PASSIVE", "SPIN=7", "THREADS=1")}
    assert wait == {"project": {}, "libgomp": {"GOMP_SPINCOUNT": "300000"}, "PASSIVE": {"OMP_WAIT_POLICY": "PASSIVE"},
                    "SPIN=7": {"GOMP_SPINCOUNT": "7"}, "THREADS=1": {}}
    assert contention.thread_overrides("THREADS=1") == ["run.torch_threads=1"]
    with pytest.raises(SystemExit, match="unknown setting 'default'"):
        contention.environment("default")
