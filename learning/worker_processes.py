"""``ProcessCollector`` (``env.vector: processes``): the envs split across worker processes on
this machine, each stepping its slice in-process and acting from its own copy of the policy.

    learner                                          worker w (a process, one torch thread)
    pickled policy.state_dict()   --- its pipe --->  envs [first_w, first_w + count_w), sync,
    Rollout.join(slices)          <-- its pipe ----  a VectorEnvCollector and a CPU PolicyNet

What ``env.vector: ray`` does with Ray actors, without Ray: no cluster to start, and nothing to
restart (a worker that fails or dies stops the run, naming it). Each worker's forward passes run
beside the others' (docs/performance.md: on two cores the default rollout 1.5x as fast as
``sync``'s). Env ``i`` is seeded by its global index and each worker holds whole
forward groups (``env.forward_group``), so the rollout is the one ``sync`` collects, bit for bit.

The workers ignore SIGINT and SIGTERM (``learning.child_processes.interrupts_ignored_by_children``): a Ctrl-C
reaches the trainer alone, which finishes its update (``run/interrupt.py``). They end with the
learner: ``close()``, killed at its exit, or, when it dies without one (SIGKILL), on reading
their pipe's end-of-file.
"""
from __future__ import annotations

import multiprocessing
import pickle
import time
import traceback
import weakref
from multiprocessing.connection import Connection, wait
from typing import Any

import torch
from torch import nn

from config import Config
from learning.buffer import Rollout
from learning.child_processes import env_start_method, interrupts_ignored_by_children, kill_all
from learning.collector import VectorEnvCollector, group_slices
from learning.progress import EpisodeProgress
from policy import build_policy

CLOSE_WAIT_S = 10.0
"""How long ``close()`` waits for a worker to close its envs and exit before killing it."""


class WorkerError(RuntimeError):
    """A worker process died, or failed with an exception that does not pickle; the message names
    its envs and what happened."""


def encode(message: Any) -> bytes:
    """Plain pickling, not multiprocessing's: tensors travel as bytes, not as shared-memory handles."""
    return pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)


def send(pipe: Connection, message: Any) -> None:
    pipe.send_bytes(encode(message))


def receive(pipe: Connection) -> Any:
    return pickle.loads(pipe.recv_bytes())


def round_trips(error: BaseException) -> bool:
    """Whether ``error`` survives pickling, so the learner can raise it as it was."""
    try:
        pickle.loads(pickle.dumps(error))
    except Exception:
        return False
    return isinstance(error, Exception)


def serve(pipe: Connection, learner_ends: list[Connection], config: Config, env_indices: range,
          place: EpisodeProgress | None) -> None:
    """A worker's life: build its envs (replayed to ``place`` if given), say ``ready``, then answer
    each set of weights with ``(Rollout, EpisodeProgress, the seconds it took to collect)`` until
    told to close (``None``). An exception is sent back as ``("error", (the exception or None, its
    traceback))``, and the worker ends.

    ``learner_ends`` are the learner's ends of the pipes made so far, this worker's among them,
    which a forked worker holds copies of: closed first, so that when the learner dies (even by
    SIGKILL) every worker's pipe reads end-of-file and the worker ends."""
    for end in learner_ends:
        end.close()
    collector = None
    try:
        torch.set_num_threads(1)  # its own core's worth; the other workers and the learner have theirs
        policy = build_policy(config).eval()
        collector = VectorEnvCollector(config, place, env_indices)
        send(pipe, ("ready", None))
        while (message := receive(pipe)) is not None:
            policy.load_state_dict(message)
            start = time.perf_counter()
            rollout = collector.collect(policy)
            send(pipe, ("rollout", (rollout, collector.progress(), time.perf_counter() - start)))
    except (EOFError, BrokenPipeError):  # the learner is gone
        pass
    except BaseException as error:
        send(pipe, ("error", (error if round_trips(error) else None, traceback.format_exc())))
    finally:
        if collector is not None:
            collector.close()


class ProcessCollector:
    """The ``learning.collector.Collector`` on ``env.workers`` local processes (``env.vector: processes``),
    one per forward group at most.

    Started fresh, or, given the run's ``EpisodeProgress`` (from a checkpoint), with each worker's
    envs replayed to where they were. The workers build their envs at once, side by side.
    """

    def __init__(self, config: Config, progress: EpisodeProgress | None = None):
        env = config.env
        self.slices = group_slices(env.num_envs, env.forward_group, min(env.workers, env.n_forward_groups))
        self.places = [EpisodeProgress.start(len(s)) if progress is None else progress.slice(s.start, len(s))
                       for s in self.slices]
        start_method = env_start_method()
        context = multiprocessing.get_context(start_method)
        self.collecting = True  # until the workers are ready: a failed start kills them at once
        self.worker_seconds: list[float] = []  # of the last rollout: each worker's own collection time
        self.pipes: list[Connection] = []
        self.processes: list[multiprocessing.process.BaseProcess] = []
        self._kill = weakref.finalize(self, kill_all, self.processes)  # at exit, if close() never ran
        try:
            with interrupts_ignored_by_children():
                for indices, place in zip(self.slices, self.places):
                    ours, theirs = context.Pipe()
                    args = (theirs, [*self.pipes, ours], config, indices, None if progress is None else place)
                    process = context.Process(target=serve, args=args, daemon=True,
                                              name=f"rollout-worker-{indices.start}-{indices.stop - 1}")
                    process.start()
                    theirs.close()
                    self.pipes.append(ours)
                    self.processes.append(process)
            self._answers("ready")
            self.collecting = False
        except BaseException:
            self.close()
            raise

    def collect(self, policy: nn.Module) -> Rollout:
        weights = encode({key: value.detach().cpu() for key, value in policy.state_dict().items()})  # once for all
        self.collecting = True
        for pipe in self.pipes:
            try:
                pipe.send_bytes(weights)
            except OSError:  # a worker died since the last rollout: _answers names it
                pass
        answers = self._answers("rollout")
        self.collecting = False
        self.places = [progress for _, progress, _ in answers]
        self.worker_seconds = [seconds for _, _, seconds in answers]
        return Rollout.join([rollout for rollout, _, _ in answers])

    def progress(self) -> EpisodeProgress:
        return EpisodeProgress.join(self.places)

    def close(self) -> None:
        """Tell each worker to close its envs and exit, and kill those that have not within
        ``CLOSE_WAIT_S``; workers left mid-rollout (a second Ctrl-C, an error) are killed at once,
        their rollout of no use. Safe to call twice."""
        if not self.collecting:
            for pipe in self.pipes:
                try:
                    send(pipe, None)
                except OSError:  # the worker is gone already
                    pass
            for process in self.processes:
                process.join(CLOSE_WAIT_S)
        self._kill()
        for pipe in self.pipes:
            pipe.close()
        self.pipes = []

    def _answers(self, kind: str) -> list[Any]:
        """Each worker's next ``kind`` of message (``ready``, ``rollout``): its payload, in worker
        order. A worker's error is raised at once, its death as a ``WorkerError`` naming its envs."""
        answers: dict[int, Any] = {}
        while len(answers) < len(self.pipes):
            waiting = {w: pipe for w, pipe in enumerate(self.pipes) if w not in answers}
            ready = wait([*waiting.values(), *(self.processes[w].sentinel for w in waiting)])
            for w, pipe in waiting.items():
                if pipe in ready or self.processes[w].sentinel in ready:
                    answers[w] = self._answer(w, kind)
        return [answers[w] for w in range(len(self.pipes))]

    def _answer(self, w: int, kind: str) -> Any:
        envs = f"envs {self.slices[w].start}-{self.slices[w].stop - 1}"
        try:
            got, payload = receive(self.pipes[w])
        except (EOFError, OSError):
            self.processes[w].join(1.0)
            raise WorkerError(f"the rollout worker of {envs} died (exit code {self.processes[w].exitcode}) "
                              f"while the learner waited for its {kind}") from None
        if got == "error":  # the worker's own exception where it pickles (a NonFiniteLossError, a ConfigError)
            error, text = payload
            if error is None:
                raise WorkerError(f"the rollout worker of {envs} failed:\n{text}")
            error.add_note(f"raised in the rollout worker of {envs}:\n{text}")
            raise error
        return payload
