"""Ctrl-C and SIGTERM stop a training at the end of the current update, with a checkpoint.

The first signal only sets ``requested``; the loop finishes the update it is in (seconds), saves
a checkpoint and returns, so nothing since the last checkpoint is lost. A second signal raises
``KeyboardInterrupt`` at once, for a user who cannot wait (the last checkpoint stays intact).
"""
from __future__ import annotations

import signal
import sys
import threading
from types import FrameType

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopOnSignal:
    """``with StopOnSignal() as stop: ... if stop.requested: save and leave``; handlers restored on exit."""

    def __init__(self) -> None:
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
        print(f"\n{self.requested}: finishing this update, then saving a checkpoint "
              f"(send it again to stop at once)", file=sys.stderr)
