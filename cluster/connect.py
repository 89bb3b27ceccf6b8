"""Joining a Ray cluster, or starting one on this machine, with errors that say what to fix.

``connect("")`` joins the cluster ``RAY_ADDRESS`` names, or else starts a local one of its own
(``ray.init(address="local")``; a bare ``ray.init()`` would join whatever cluster ``ray start`` last
started on this machine). ``connect("host:port")`` joins that cluster's head and ships this
project's code to its workers (``runtime_env`` ``working_dir``); an address that does not answer
is a ``ClusterError`` naming it, raised within seconds, before any training.
"""
from __future__ import annotations

import logging
import os
import signal
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import ray

from config import ConfigError

PROJECT = Path(__file__).resolve().parents[1]
SHIPPED_EXCLUDES = [".venv/", "runs/", ".git/", "**/__pycache__/", "*.pt", "*.gif"]
"""What ``working_dir`` leaves behind when the code is shipped to a remote cluster."""


TOKEN_NOTICE = "ray._private.authentication.authentication_token_setup"
"""The logger of Ray's notice that a new local cluster uses token authentication, its default."""


class ClusterError(ConfigError):
    """No Ray cluster at the address given, or one too small for what was asked."""


def check_reachable(address: str, timeout_s: float = 5.0) -> None:
    """Raise ``ClusterError`` unless something listens at ``address`` (``host:port``)."""
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ClusterError(f"Ray address {address!r} must look like host:port (e.g. 10.0.0.5:6379), or be 'auto'")
    try:
        socket.create_connection((host, int(port)), timeout=timeout_s).close()
    except OSError as error:
        raise ClusterError(f"no Ray cluster answers at {address} ({error}); start one with "
                           f"`ray start --head` there, or leave the address empty for a local one") from None


def connect(address: str = "", num_cpus: int | None = None) -> bool:
    """Make sure this process is connected to Ray; returns True if this call started it (and the
    caller should ``ray.shutdown()`` when done). ``num_cpus`` sizes a local cluster only."""
    if ray.is_initialized():
        return False
    address = address or os.environ.get("RAY_ADDRESS", "")
    if not address:
        # Ray's default for a new local cluster, token authentication, stays on; only the warning
        # it prints about it at every start is not shown (a user's RAY_AUTH_MODE is theirs to set).
        logging.getLogger(TOKEN_NOTICE).setLevel(logging.ERROR)
        ray.init(address="local", num_cpus=num_cpus, include_dashboard=False, logging_level="warning",
                 log_to_driver=True)
        return True
    if address != "auto":
        check_reachable(address)
    runtime_env = {"working_dir": str(PROJECT), "excludes": SHIPPED_EXCLUDES}
    try:
        ray.init(address=address, runtime_env=runtime_env, logging_level="warning")
    except (ConnectionError, RuntimeError) as error:
        raise ClusterError(f"could not join the Ray cluster at {address}: {error}") from None
    return True


@contextmanager
def ray_session(address: str = "", num_cpus: int | None = None) -> Iterator[None]:
    """``connect`` for the block; a Ray the block started is shut down after it, however it ends.

    In the block SIGTERM (``kill PID``, the way to stop a program started in the background)
    raises ``KeyboardInterrupt`` as Ctrl-C does, so the caller's Ctrl-C handling covers both.
    ``ray.init`` installs its own handler, which dumps a stack and dies; this one replaces it.
    """
    started = connect(address, num_cpus)
    main_thread = threading.current_thread() is threading.main_thread()  # the only one that may set handlers
    previous_sigterm = signal.signal(signal.SIGTERM, _interrupt) if main_thread else None
    try:
        yield
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, previous_sigterm)
        if started:
            ray.shutdown()


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def completion_order(refs: list[ray.ObjectRef], tick: Callable[[], None] | None = None,
                     every_s: float = 10.0) -> Iterator[int]:
    """The indices of ``refs`` as their tasks finish (``ray.get`` each one then: it will not block);
    ``tick()``, if given, is called every ``every_s`` seconds that pass with none finishing."""
    index = {ref: i for i, ref in enumerate(refs)}
    waiting = list(refs)
    while waiting:
        ready, waiting = ray.wait(waiting, num_returns=1, timeout=None if tick is None else every_s)
        if not ready:
            tick()
            continue
        yield index[ready[0]]


def cluster_cpus() -> int:
    """CPUs the connected cluster has in all."""
    return int(ray.cluster_resources().get("CPU", 0))
