"""A lock for files under the workbench's ``notes/``, kept out of the workbench index."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from .files import file_lock

__all__ = ["notes_lock"]


@contextlib.contextmanager
def notes_lock(path: Path) -> Iterator[None]:
    """Exclusive lock for a read-modify-write of ``path``, through a hidden ``.<name>.lock`` file.

    The workbench index skips hidden files; a visible ``brief.md.lock`` would be listed to the model as a
    note.
    """
    with file_lock(path.with_name(f".{path.name}")):
        yield
