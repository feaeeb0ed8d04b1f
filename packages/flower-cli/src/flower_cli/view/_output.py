"""Standard output for results (answers, ``--json`` events, listings) that a full disk cannot crash.

A write that fails is remembered and every later one dropped, so a run whose stdout goes to a full disk
still finishes and keeps its sessions; the command then ends with one line saying so (see ``app.main``).
"""

from __future__ import annotations

import io
import os
import sys

__all__ = ["STDOUT", "GuardedStdout"]


class GuardedStdout(io.TextIOBase):
    """Writes through to ``sys.stdout`` until one fails; ``failure`` is that error (None while all is well)."""

    def __init__(self) -> None:
        super().__init__()
        self.failure: OSError | None = None

    def write(self, text: str) -> int:
        if self.failure is None:
            try:
                sys.stdout.write(text)
            except OSError as exc:
                self._fail(exc)
        return len(text)

    def flush(self) -> None:
        if self.failure is None:
            try:
                sys.stdout.flush()
            except OSError as exc:
                self._fail(exc)

    def writable(self) -> bool:
        return True

    def _fail(self, exc: OSError) -> None:
        self.failure = exc
        # What is still buffered cannot get out either; the interpreter's flush at exit must not fail again.
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):  # stdout without a file descriptor (captured): nothing to redirect
            pass


STDOUT = GuardedStdout()
