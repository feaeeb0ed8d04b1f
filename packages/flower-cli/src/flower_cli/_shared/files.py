"""Writing files other processes read: atomically, under an advisory lock, never over a corrupt original."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["atomic_write_text", "file_lock", "move_aside", "read_json"]


def atomic_write_text(path: Path, text: str, *, mode: int | None = None) -> None:
    """Replace ``path`` in one step: readers see the old file or the new one, never half of either.

    The new file is 0600 (``mkstemp`` creates it so) unless ``mode`` says otherwise: the manifest, lineage,
    notes and handoff documents are the owner's alone.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def file_lock(path: Path, *, timeout: float | None = None) -> Iterator[bool]:
    """Hold an exclusive advisory lock on ``<path>.lock`` for a read-modify-write sequence.

    With a ``timeout`` the lock is given up after that long and the body runs anyway (yielding False): the
    signal-rescue path must record the in-flight step even if this very process holds the lock.
    """
    lock_path = path.with_name(path.name + ".lock")
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    locked = False
    try:
        if timeout is None:
            fcntl.flock(fd, fcntl.LOCK_EX)
            locked = True
        else:
            deadline = time.monotonic() + timeout
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    locked = True
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        break
                    time.sleep(0.02)
        yield locked
    finally:
        if locked:
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def move_aside(path: Path) -> Path:
    """Keep a file we cannot parse next to where it was, so nothing is lost, and free its name."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = path.with_name(f"{path.name}.corrupt-{stamp}")
    n = 1
    while target.exists():
        target = path.with_name(f"{path.name}.corrupt-{stamp}-{n}")
        n += 1
    os.replace(path, target)
    return target


def read_json(path: Path) -> tuple[Any, str | None]:
    """(data, None), or (None, why) when the file is missing (why=None too) or cannot be parsed."""
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None, None
    except (OSError, UnicodeDecodeError) as exc:
        return None, f"unreadable ({exc.__class__.__name__}: {exc})"
    try:
        return json.loads(raw), None
    except ValueError as exc:
        return None, f"not valid JSON ({exc})"
