"""How a running step is told to stop from outside: SIGTERM/SIGHUP (record it, then unwind) and a human's
interrupt (stop at the next message, then resume the same session with their words).

Why a module of its own: both arrive from outside the step's event loop (a signal handler, another thread), and
both must leave the manifest and the session in a state the next run can pick up.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

__all__ = ["Interrupt", "Terminated", "install_signal_rescue"]


class Terminated(BaseException):
    """SIGTERM/SIGHUP arrived: unwind (so the harness subprocess is closed too), then die of ``signum``."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"terminated by signal {signum}")
        self.signum = signum

    def die(self) -> None:
        """End the process the way the signal would have (exit status 128+signum to the shell)."""
        signal.signal(self.signum, signal.SIG_DFL)
        os.kill(os.getpid(), self.signum)


def install_signal_rescue(rescue: Callable[[], None]) -> Callable[[], None]:
    """On SIGTERM/SIGHUP: call ``rescue`` (it records the in-flight step), then raise `Terminated` to unwind.

    Unwinding (rather than dying on the spot) lets the SDK close the Claude Code subprocess; the caller catches
    `Terminated` and calls its ``die()``. Returns a function that uninstalls the handlers.
    """
    previous: dict[int, Any] = {}

    def handler(signum: int, frame: FrameType | None) -> None:
        rescue()
        signal.signal(signum, signal.SIG_IGN)  # a second signal must not interrupt the unwinding
        raise Terminated(signum)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        try:
            previous[sig] = signal.signal(sig, handler)
        except (ValueError, OSError):  # not the main thread
            pass

    def restore() -> None:
        for sig, old in previous.items():
            signal.signal(sig, old)

    return restore


class Interrupt:
    """A human's interrupt of the running step: set from any thread, read by the step at its next message.

    One per Runtime, not per step: the Runtime hands it to each step, which clears it when it starts (an
    interrupt between steps is not carried into the next one) and takes the words when it resumes.
    """

    def __init__(self) -> None:
        self._set = threading.Event()
        self._words = ""

    def ask(self, words: str = "") -> None:
        """Ask the running step to stop at its next message and go on with ``words``."""
        self._words = words
        self._set.set()

    def is_set(self) -> bool:
        return self._set.is_set()

    def clear(self) -> None:
        self._set.clear()

    def take(self) -> str:
        """Clear the interrupt and return its words (stripped; "" for none)."""
        self._set.clear()
        words, self._words = self._words.strip(), ""
        return words
