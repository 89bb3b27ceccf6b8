"""``ProcessCollector``: worker processes collect the in-process rollout, resume from their places,
and fail loudly (the worker's own exception, or its death named) instead of hanging."""
import multiprocessing
import os
import pickle
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

import learning.worker_processes
from learning.choose_collector import make_collector
from learning.collector import VectorEnvCollector
from learning.ppo import NonFiniteLossError
from learning.worker_processes import ProcessCollector, WorkerError
from policy import PolicyNet
from tests.helpers import ROOT, assert_same_rollout, smoke_config


@pytest.fixture
def forked(monkeypatch):
    """Workers forked, so they take this test's patches along (under Ray they would be forked from the
    fork server, which has not seen them)."""
    monkeypatch.setattr(learning.worker_processes, "env_start_method", lambda: "fork")


def fail_in_slice(monkeypatch, first_env: int, error: Exception) -> None:
    """Make the worker whose slice starts at ``first_env`` raise ``error`` when asked to collect."""
    original = VectorEnvCollector.collect

    def collect(self, policy):
        if self.env_indices[0] == first_env:
            raise error
        return original(self, policy)

    monkeypatch.setattr(VectorEnvCollector, "collect", collect)


@pytest.mark.parametrize("gae_values", ["critic", "greedy_rollout"])
def test_workers_collect_the_sync_rollout_and_resume_from_their_places(tmp_path, gae_values):
    config = smoke_config(tmp_path, "env.num_envs=3", "env.kwargs.max_steps=8", f"ppo.gae_values={gae_values}",
                          "env.vector=processes", "env.workers=2")
    torch.manual_seed(0)
    policy = PolicyNet(config.model)
    workers = make_collector(config)
    assert isinstance(workers, ProcessCollector) and workers.slices == [range(0, 2), range(2, 3)]
    sync = VectorEnvCollector(config)
    first, second = sync.collect(policy), sync.collect(policy)
    assert any(r.truncated.any() for r in (first, second))  # autoresets were crossed
    start = time.perf_counter()
    assert_same_rollout(workers.collect(policy), first)
    seconds = time.perf_counter() - start
    assert len(workers.worker_seconds) == 2 and all(0 < s <= seconds for s in workers.worker_seconds)
    resumed = ProcessCollector(config, workers.progress())  # as from a checkpoint after the first rollout
    assert_same_rollout(resumed.collect(policy), second)
    assert_same_rollout(workers.collect(policy), second)
    assert workers.progress() == resumed.progress() == sync.progress()
    for collector in (workers, resumed, sync):
        collector.close()


def test_one_worker_per_forward_group_at_most(tmp_path):
    config = smoke_config(tmp_path, "env.num_envs=3", "env.forward_group=2", "env.vector=processes", "env.workers=3")
    collector = make_collector(config)
    assert collector.slices == [range(0, 2), range(2, 3)] and len(collector.processes) == 2
    collector.close()


def test_a_workers_exception_reaches_the_learner_as_itself_naming_the_envs(tmp_path, monkeypatch, forked):
    fail_in_slice(monkeypatch, 1, NonFiniteLossError("the policy's outputs are not finite while collecting a rollout"))
    config = smoke_config(tmp_path, "env.vector=processes", "env.workers=2")
    collector = make_collector(config)
    with pytest.raises(NonFiniteLossError, match="not finite while collecting") as raised:
        collector.collect(PolicyNet(config.model))
    assert "raised in the rollout worker of envs 1-1" in "".join(raised.value.__notes__)
    assert "raise error" in "".join(raised.value.__notes__)  # the worker's traceback, down to the raise
    collector.close()


class Unpicklable(Exception):
    def __reduce__(self):
        raise TypeError("not this one")


def test_an_exception_that_does_not_pickle_comes_back_as_its_traceback(tmp_path, monkeypatch, forked):
    fail_in_slice(monkeypatch, 0, Unpicklable("boom"))
    with pytest.raises(TypeError):
        pickle.dumps(Unpicklable("boom"))
    collector = make_collector(smoke_config(tmp_path, "env.vector=processes", "env.workers=2"))
    with pytest.raises(WorkerError, match=r"(?s)the rollout worker of envs 0-0 failed:\n.*Unpicklable: boom"):
        collector.collect(PolicyNet(smoke_config(tmp_path).model))
    collector.close()


def test_a_worker_that_dies_is_named_and_nothing_hangs(tmp_path):
    config = smoke_config(tmp_path, "env.vector=processes", "env.workers=2")
    collector = make_collector(config)
    policy = PolicyNet(config.model)
    collector.collect(policy)
    collector.processes[1].kill()
    collector.processes[1].join()  # dead before the weights are sent: its pipe is broken
    started = time.perf_counter()
    with pytest.raises(WorkerError, match=r"the rollout worker of envs 1-1 died \(exit code -9\) while the "
                                          r"learner waited for its rollout"):
        collector.collect(policy)
    collector.close()
    assert time.perf_counter() - started < 5
    assert not any(process.is_alive() for process in collector.processes)


def test_workers_ignore_interrupts_and_end_with_close(tmp_path):
    config = smoke_config(tmp_path, "env.vector=processes", "env.workers=2")
    collector = make_collector(config)
    policy = PolicyNet(config.model)
    for process in collector.processes:  # as a terminal's Ctrl-C or a group's SIGTERM would
        os.kill(process.pid, signal.SIGINT)
        os.kill(process.pid, signal.SIGTERM)
    collector.collect(policy)  # still there
    collector.close()
    assert [process.exitcode for process in collector.processes] == [0, 0]  # exited by themselves
    collector.close()  # twice is fine


def proc_stat(pid: int) -> list[str]:
    """The fields of ``/proc/PID/stat`` after the command in parentheses: the state, then the parent."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def parent_pid(pid: int) -> int:
    return int(proc_stat(pid)[1])


def test_under_ray_workers_come_from_a_fork_server_that_outlives_interrupts(tmp_path, local_ray):
    """Where Ray's threads run, the workers are forked from a fork server, never from this process;
    they and the server ignore SIGINT and SIGTERM, and the next collector's workers come from the
    same server. Their rollout is the in-process one."""
    config = smoke_config(tmp_path, "env.num_envs=3", "env.kwargs.max_steps=8", "env.vector=processes",
                          "env.workers=2")
    torch.manual_seed(0)
    policy = PolicyNet(config.model)
    sync = VectorEnvCollector(config)
    expected = sync.collect(policy), sync.collect(policy)
    sync.close()
    first = make_collector(config)
    servers = {parent_pid(process.pid) for process in first.processes}
    assert {type(process._popen).__module__ for process in first.processes} == {"multiprocessing.popen_forkserver"}
    assert len(servers) == 1 and os.getpid() not in servers
    for pid in [process.pid for process in first.processes] + list(servers):  # as a group's Ctrl-C or SIGTERM
        os.kill(pid, signal.SIGINT)
        os.kill(pid, signal.SIGTERM)
    assert_same_rollout(first.collect(policy), expected[0])
    second = ProcessCollector(config, first.progress())
    first.close()
    assert [process.exitcode for process in first.processes] == [0, 0]  # exited by themselves
    assert {parent_pid(process.pid) for process in second.processes} == servers
    assert_same_rollout(second.collect(policy), expected[1])
    second.close()


def test_under_ray_a_ctrl_c_while_the_workers_start_is_not_lost(tmp_path, local_ray, monkeypatch):
    """It used to be: under Ray this process ignored SIGINT while its workers started (a fresh
    interpreter could inherit only SIG_IGN). Now it notes it and gets it again after the starts,
    and the collector stops the workers it started."""
    started, real_start = [], multiprocessing.process.BaseProcess.start

    def start(process):  # a Ctrl-C just as each worker starts
        signal.raise_signal(signal.SIGINT)
        real_start(process)
        started.append(process)

    monkeypatch.setattr(multiprocessing.process.BaseProcess, "start", start)
    config = smoke_config(tmp_path, "env.vector=processes", "env.workers=2")
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal, even under a runner
    try:
        with pytest.raises(KeyboardInterrupt):
            make_collector(config)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert len(started) == 2 and not any(process.is_alive() for process in started)


def test_a_program_that_never_closes_its_workers_still_exits(tmp_path):
    code = ("from config import load_config; from learning.choose_collector import make_collector; "
            f"make_collector(load_config('configs/smoke.yaml', ['run.run_dir={tmp_path}', 'env.vector=processes', "
            "'env.workers=2'])); print('made')")
    out_file = tmp_path / "out.txt"
    with out_file.open("w") as out:  # a file, not a pipe: workers left alive would hold a pipe open
        program = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                                   start_new_session=True)
        try:
            program.wait(timeout=60)  # not stuck joining workers that ignore SIGTERM
        except subprocess.TimeoutExpired:
            os.killpg(program.pid, signal.SIGKILL)
            program.wait()
            pytest.fail("the program did not exit within 60 s: its workers outlived it")
    assert program.returncode == 0 and out_file.read_text().strip().endswith("made"), out_file.read_text()


def test_workers_left_mid_rollout_are_killed_at_once(tmp_path, monkeypatch, forked):
    original = VectorEnvCollector.collect

    def slow(self, policy):
        time.sleep(30)
        return original(self, policy)

    monkeypatch.setattr(VectorEnvCollector, "collect", slow)
    collector = make_collector(smoke_config(tmp_path, "env.vector=processes", "env.workers=2"))

    def interrupted(kind):  # as a second Ctrl-C while the learner waits for the rollouts
        raise KeyboardInterrupt
    monkeypatch.setattr(collector, "_answers", interrupted)
    with pytest.raises(KeyboardInterrupt):
        collector.collect(PolicyNet(smoke_config(tmp_path).model))
    started = time.perf_counter()
    collector.close()
    assert time.perf_counter() - started < 3 and not any(process.is_alive() for process in collector.processes)


def test_workers_end_when_their_learner_is_killed(tmp_path):
    code = ("import time; from config import load_config; from learning.choose_collector import make_collector; "
            f"c = make_collector(load_config('configs/smoke.yaml', ['run.run_dir={tmp_path}', 'env.vector=processes', "
            "'env.workers=2'])); print(*[p.pid for p in c.processes], flush=True); time.sleep(60)")
    learner = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE, text=True,
                               start_new_session=True)
    workers = [int(pid) for pid in learner.stdout.readline().split()]
    assert len(workers) == 2
    os.kill(learner.pid, signal.SIGKILL)  # no exit handler runs
    learner.wait()
    deadline = time.perf_counter() + 20
    alive = workers
    while alive and time.perf_counter() < deadline:
        time.sleep(0.1)
        alive = [pid for pid in workers if os.path.exists(f"/proc/{pid}") and
                 proc_stat(pid)[0] != "Z"]
    if alive:
        os.killpg(learner.pid, signal.SIGKILL)
    assert not alive, "the workers outlived their learner"
