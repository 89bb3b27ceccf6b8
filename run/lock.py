"""One training per run folder: an exclusive lock held for the training's lifetime.

The lock is ``fcntl.flock`` on ``<run_dir>/.lock``. The kernel drops it when the process ends,
however it ends (Ctrl-C, SIGKILL, a crash), so the file a dead run leaves behind never blocks the
next one: a stale lock is recognised by being unlocked. A child the training forks (a rollout
worker of ``env.vector: processes``) closes its copy of the lock's file at once, so that a child
outliving a killed training never holds the folder. The file's text names the holder, for the
message that refuses a second training. (flock is local to one machine: two machines writing into
one shared folder are not kept apart by it.)
"""
from __future__ import annotations

import fcntl
import os
import socket
import sys
import time
from pathlib import Path

LOCK_NAME = ".lock"
_HELD: set[int] = set()
"""File descriptors of the locks this process holds."""
_FORK_HOOK: list[bool] = []
"""Whether ``_close_in_child`` is registered (once per process, at the first lock taken)."""


def _close_in_child() -> None:
    """In a forked child: close the inherited lock files. A flock lives as long as any copy of its
    file is open, and the parent's copy keeps it held."""
    for fd in _HELD:
        os.close(fd)
    _HELD.clear()


class RunLockedError(RuntimeError):
    """Another training holds the run folder."""


class RunLock:
    """``RunLock(run_dir).acquire()`` or raise ``RunLockedError`` naming the holder; ``release()`` when done."""

    def __init__(self, run_dir: Path):
        self.path = Path(run_dir) / LOCK_NAME
        self._fd: int | None = None

    def acquire(self) -> "RunLock":
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 4096).decode(errors="replace").strip() or "a process that has not written its name yet"
            os.close(fd)
            raise RunLockedError(f"{self.path.parent} is in use by another training ({holder}); "
                                 f"wait for it to end, or train into another folder (run.name)") from None
        os.ftruncate(fd, 0)
        command = " ".join(sys.argv) or "python"
        os.write(fd, f"pid {os.getpid()} on {socket.gethostname()} since {time.strftime('%Y-%m-%d %H:%M:%S')}: "
                     f"{command}".encode())
        self._fd = fd
        if not _FORK_HOOK:
            os.register_at_fork(after_in_child=_close_in_child)
            _FORK_HOOK.append(True)
        _HELD.add(fd)
        return self

    def release(self) -> None:
        if self._fd is not None:
            _HELD.discard(self._fd)
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
