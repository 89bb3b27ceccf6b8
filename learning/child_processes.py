"""How the rollout worker processes start and stop: forked, or from a fork server where Ray runs,
never acting on Ctrl-C or SIGTERM themselves (the trainer alone does, ``run/interrupt.py``).
Used by ``learning.worker_processes``, the ``processes`` collector.
"""
from __future__ import annotations

import multiprocessing
import multiprocessing.forkserver
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from types import FrameType
from typing import Any

from run.interrupt import SIGNALS


def kill_all(processes: Sequence[multiprocessing.process.BaseProcess]) -> None:
    """SIGKILL every process still alive (env and rollout-worker processes ignore SIGTERM), then reap them."""
    for process in processes:
        if process.is_alive():
            process.kill()
    for process in processes:
        process.join()


def env_start_method() -> str | None:
    """How env and rollout-worker processes start: the platform's default (a fork on Linux, which
    costs no imports), or ``"forkserver"`` in a process that runs Ray. Ray's gRPC threads hold
    locks that a forked child inherits held and may wait on forever (seen: an env process of
    ``bench.collector_speed``, forked inside its Ray session, hung in gRPC's clean-up during its
    first reset), so there a worker is forked from this process's fork server instead: a fresh
    interpreter that runs no thread, started once (``start_fork_server``) with the workers' modules
    imported: cheaper than a fresh interpreter per worker (``spawn``, docs/performance.md). Ray is
    only looked up, never imported, here."""
    ray = sys.modules.get("ray")
    if ray is None or not ray.is_initialized():
        return None
    start_fork_server()
    return "forkserver"


FORK_SERVER_PRELOAD = ["learning.worker_processes"]
"""What the fork server imports before it forks a worker: the rollout worker's modules (torch, the
policy, the envs and gymnasium, so also the env workers'), never Ray."""


def start_fork_server() -> None:
    """Start this process's fork server if it is not running, with SIGINT and SIGTERM ignored.

    A fresh interpreter keeps no Python handler through exec, but it keeps SIG_IGN, and every
    process forked from it keeps it too: neither a terminal's Ctrl-C nor a group's SIGTERM reaches
    the server or the workers it forks (the trainer acts on them, ``run/interrupt.py``). This process
    ignores them only while it checks that the server runs, and, the first time, starts it.

    The server lives as long as this process, and the workers it forks get the environment
    variables this process had when the server started: a later change to ``os.environ`` does not
    reach them (its working folder does: each worker moves to this process's at its start).
    """
    multiprocessing.set_forkserver_preload(FORK_SERVER_PRELOAD)
    with signals_handled_by(signal.SIG_IGN):
        multiprocessing.forkserver.ensure_running()


@contextmanager
def signals_handled_by(handler: Any) -> Iterator[None]:
    """SIGINT and SIGTERM go to ``handler`` in the block, then to the handlers they had. Outside
    the main thread, which alone may set them, the block runs with them untouched."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, handler) for sig in SIGNALS}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


@contextmanager
def interrupts_ignored_by_children() -> Iterator[None]:
    """Processes started in the block ignore SIGINT and SIGTERM; this one acts on them after it.

    A terminal's Ctrl-C goes to every process of the foreground group. A rollout worker would die
    of it mid-step and take the training down before it could save;
    the workers never act on these signals, and the trainer alone does (``run/interrupt.py``). They
    still end with the trainer: ``close()``, or their pipe closing when it dies.

    In the block this process only notes the signals, and a forked worker inherits that handler
    and keeps it, so it notes them and does nothing else (a worker forked from the fork server
    ignores them: ``start_fork_server``). At the end of the block this process gets the signals it
    noted again (``signal.raise_signal``), under the handlers it had, so a Ctrl-C while the workers
    start is not lost.
    """
    noted: list[int] = []

    def note(signum: int, frame: FrameType | None) -> None:
        noted.append(signum)

    try:
        with signals_handled_by(note):
            yield
    finally:
        for sig in dict.fromkeys(noted):  # each signal once, in the order it came
            signal.raise_signal(sig)
