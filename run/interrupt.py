"""Ctrl-C and SIGTERM stop a training at the end of the current update, with a checkpoint.

The first signal only sets ``requested``; the loop finishes the update it is in (seconds) and
returns, and on its way out the trainer makes sure the last finished update has its checkpoint
(``Trainer.train``: one place, whatever the loop was doing when the signal came: collecting,
updating, logging, playing the image episode or writing a checkpoint). ``Stopped`` says what was
saved. A second signal raises ``KeyboardInterrupt`` at once, for a user who cannot wait (the
checkpoints already written stay intact: each is written atomically).

The same two-step stop serves the other long programs: imitation and the map predictor keep the
rounds or epochs finished, an evaluation reports the maps finished (``evaluation.play.evaluate_actors``).
"""
from __future__ import annotations

import signal
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopOnSignal:
    """``with StopOnSignal() as stop: ... if stop.requested: save and leave``; handlers restored on exit."""

    def __init__(self, plan: str = "finishing this update, then saving a checkpoint") -> None:
        self.plan = plan  # what the program does next, told to the user at the first signal
        self.requested: str | None = None  # the name of the first signal received
        self._previous: dict[int, object] = {}

    def __enter__(self) -> "StopOnSignal":
        if threading.current_thread() is threading.main_thread():  # Python delivers signals there only
            self._previous = {sig: signal.signal(sig, self._handle) for sig in SIGNALS}
        return self

    def __exit__(self, *exc_info: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.requested is not None:
            raise KeyboardInterrupt
        self.requested = signal.Signals(signum).name
        print(f"\n{self.requested}: {self.plan} (send it again to stop at once)", file=sys.stderr)


def signal_exit_code(name: str) -> int:
    """The shell's code for a program ended by the signal ``name`` (130 for SIGINT, 143 for SIGTERM)."""
    return 128 + signal.Signals[name].value


@dataclass(frozen=True)
class Stopped:
    """A training a signal ended early, and what it left on disk."""

    signal: str
    """The signal's name: ``SIGINT`` or ``SIGTERM``."""
    update: int
    """The last update that finished."""
    checkpoint: Path | None
    """The checkpoint holding that update; None when no update had finished (nothing saved)."""

    def describe(self) -> str:
        if self.checkpoint is None:
            return f"stopped by {self.signal} before the first update finished; nothing was saved"
        return f"stopped by {self.signal} after update {self.update}; its checkpoint is {self.checkpoint}"

    @property
    def exit_code(self) -> int:
        """The shell's code for a program ended by this signal (130 for SIGINT, 143 for SIGTERM)."""
        return signal_exit_code(self.signal)
