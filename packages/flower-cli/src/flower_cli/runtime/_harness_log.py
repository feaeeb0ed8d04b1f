"""Claude Code's own diagnostics (the harness's stderr), kept in a file under the run dir, not on the terminal.

Left alone, the harness writes straight to the terminal it inherits: debug output, warnings, cursor codes
in the middle of flower's progress — or, into a pipe, into the caller's log. The SDK hands each line to
``ClaudeAgentOptions.stderr`` instead when one is set; `HarnessLog.write` is that callback. The file is
appended to (one header per process), is readable by its owner only (verbose harness output can carry
request headers), and is opened per line, so nothing needs closing and a crash loses nothing. A file that
cannot be written is dropped quietly: diagnostics must never stop a run.
"""

from __future__ import annotations

import os
import re
import threading
import time
from pathlib import Path

__all__ = ["HarnessLog"]

_CONTROL = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|[\x00-\x1f\x7f]")


class HarnessLog:
    """The ``stderr`` callback for the SDK: each line appended to ``path``; ``lines`` counts what had text."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lines = 0  # lines with visible text written by this process (a bare cursor code does not count)
        self._lock = threading.Lock()
        self._started = False
        self._broken = False

    def write(self, line: str) -> None:
        text = line.rstrip("\n")
        with self._lock:
            if self._broken:
                return
            head = "" if self._started else f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} flower pid {os.getpid()}\n"
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
                with os.fdopen(fd, "a", encoding="utf-8", errors="replace") as handle:
                    handle.write(f"{head}{time.strftime('%H:%M:%S')} {text}\n")
            except OSError:
                self._broken = True
                return
            self._started = True
            if _CONTROL.sub("", text).strip():
                self.lines += 1
