"""Keeping the handoff document under the workbench's ``notes/`` (or the run dir), each generation archived."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

from ..._shared.files import atomic_write_text
from ..._shared.notes_lock import notes_lock
from ._document import Handoff

__all__ = ["safe_step_name", "save"]

_UNSAFE = re.compile(r'[/\\:*?"<>|\x00-\x1f\x7f]')


def safe_step_name(step: str) -> str:
    """A step name usable in a file name: path separators and characters Windows refuses removed."""
    return _UNSAFE.sub("", step).strip().strip(".") or "step"


def save(notes_dir: Path | str, step: str, doc: Handoff, *, now: float | None = None) -> Path:
    """Write ``doc`` to ``<notes>/handoff-<step>.md``; the previous generation's file, if any, is moved to
    ``<notes>/archive/handoff/<step>-<YYYYmmdd-HHMMSS>.md`` first (never overwriting an archived one)."""
    notes = Path(notes_dir)
    safe = safe_step_name(step)
    path = notes / f"handoff-{safe}.md"
    with notes_lock(path):
        if path.exists():
            archive = notes / "archive" / "handoff"
            archive.mkdir(parents=True, exist_ok=True)
            stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
            target, n = archive / f"{safe}-{stamp}.md", 1
            while target.exists():
                n += 1
                target = archive / f"{safe}-{stamp}-{n}.md"
            os.replace(path, target)
        atomic_write_text(path, doc.to_markdown(step))
    return path
