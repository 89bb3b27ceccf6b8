"""evaluate.py --workers 2 on a local Ray: exactly the serial report, in the serial order; a stop keeps
the first chunks finished."""
import json
from types import SimpleNamespace

import ray
import torch

import cluster.parallel_evaluation as on_ray
import evaluate
from config import EnvConfig
from env.baselines import BASELINES
from evaluation.play import evaluate_actors
from learning.collector import contiguous_slices
from planner.files import planner_entry
from planner.predictor_files import predictor_file
from run.pretrained import export
from tests.helpers import free_everywhere_predictor


def test_parallel_evaluation_equals_the_serial_one(local_ray, smoke_run, tmp_path, monkeypatch):
    chunks, running = [], []  # the number of chunks asked for; the tasks in flight at each wait
    monkeypatch.setattr(on_ray, "contiguous_slices", lambda n, parts: chunks.append(parts) or contiguous_slices(n, parts))
    wait = ray.wait
    monkeypatch.setattr(ray, "wait", lambda refs, **kwargs: running.append(len(refs)) or wait(refs, **kwargs))
    serial, parallel = tmp_path / "serial.json", tmp_path / "parallel.json"
    common = ["--checkpoint", str(smoke_run), "--episodes", "5", "--seed", "3"]
    assert evaluate.main([*common, "--json", str(serial)]) == 0
    assert evaluate.main([*common, "--json", str(parallel), "--workers", "2", "--gif", str(tmp_path / "a.gif")]) == 0
    serial, parallel = json.loads(serial.read_text()), json.loads(parallel.read_text())
    assert chunks == [5]  # the parallel path ran, a map a chunk (fewer maps than 2 x TASKS_PER_WORKER)
    assert max(running) == 2 and running[-1] == 1  # never more tasks at once than --workers
    assert parallel == serial
    assert list(serial["per_episode"]) == ["agent", "random", "nearest_frontier", "greedy"]
    assert (tmp_path / "a.gif").stat().st_size > 0


def test_the_planner_a_checkpoint_carries_plays_on_ray_as_in_this_process(local_ray, smoke_run, tmp_path):
    torch.save(predictor_file(free_everywhere_predictor(), {}), tmp_path / "predictor.pt")
    reports = {}
    for opening in (None, 6):  # the opening travels to the workers with the predictor
        agent = tmp_path / f"agent_{opening}.pt"
        export(smoke_run, agent, planner=planner_entry(tmp_path / "predictor.pt", prior_weight=0.0, opening=opening))
        serial, parallel = tmp_path / "serial.json", tmp_path / "parallel.json"
        common = ["--checkpoint", str(agent), "--episodes", "3", "--seed", "1", "--policy", "planner"]
        assert evaluate.main([*common, "--json", str(serial)]) == 0
        assert evaluate.main([*common, "--json", str(parallel), "--workers", "2"]) == 0
        serial, parallel = json.loads(serial.read_text()), json.loads(parallel.read_text())
        assert parallel == serial and len(serial["per_episode"]["planner"]) == 3
        reports[opening] = serial["per_episode"]["planner"]
    assert reports[6] != reports[None]  # the opened guess plays other routes


SMALL = EnvConfig(kwargs={"map_size": 16, "max_steps": 40})
NAMES = ["greedy", "nearest_frontier"]


def test_a_stop_cancels_the_chunk_in_play_and_keeps_the_chunks_finished(local_ray, monkeypatch):
    serial = evaluate_actors({name: BASELINES[name] for name in NAMES}, SMALL, 5, seed=3, progress=False)
    stop, cancelled, wait, cancel = SimpleNamespace(requested=None), [], ray.wait, ray.cancel

    def wait_then_a_signal(refs, **kwargs):
        ready, rest = wait(refs, **kwargs)
        if ready:
            stop.requested = "SIGINT"  # as StopOnSignal notes a signal, once the first chunk is back
        return ready, rest

    monkeypatch.setattr(ray, "wait", wait_then_a_signal)
    monkeypatch.setattr(ray, "cancel", lambda ref, **kwargs: cancelled.append(ref) or cancel(ref, **kwargs))
    stopped = on_ray.evaluate_on_ray(NAMES, None, SMALL, 5, seed=3, workers=1, stop=stop)  # 5 chunks, one at a time
    assert stopped == {name: results[:1] for name, results in serial.items()}
    assert len(cancelled) == 1  # the second chunk, started as the first came back; no third began


def test_after_a_stop_a_chunk_finished_behind_an_unfinished_one_is_not_kept(local_ray, monkeypatch):
    stop, wait = SimpleNamespace(requested=None), ray.wait

    def the_second_chunk_first(refs, **kwargs):
        wait(refs, num_returns=len(refs))  # both finished, but only the second is taken
        stop.requested = "SIGTERM"
        return [refs[1]], [refs[0]]

    monkeypatch.setattr(ray, "wait", the_second_chunk_first)
    stopped = on_ray.evaluate_on_ray(NAMES, None, SMALL, 5, seed=3, workers=2, stop=stop)
    assert stopped == {name: [] for name in NAMES}  # maps 2.. without map 1 would pair wrongly with other reports


def test_a_later_part_of_the_maps_plays_as_in_the_serial_evaluation(local_ray):
    serial = evaluate_actors({name: BASELINES[name] for name in NAMES}, SMALL, 5, seed=3, progress=False)
    later = on_ray.evaluate_on_ray(NAMES, None, SMALL, 3, seed=3, workers=2, first_episode=2)  # as --resume asks
    assert later == {name: results[2:] for name, results in serial.items()}
