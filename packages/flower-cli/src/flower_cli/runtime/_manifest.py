"""manifest.json: one row per step run, shared by every process that uses the same run dir."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .._shared.files import atomic_write_text, file_lock, move_aside, read_json

__all__ = ["Manifest"]


class Manifest:
    """Merge-on-write: each process replaces only its own rows (keyed by its run id) and keeps the rest.

    The read-modify-write runs under a file lock and ends with an atomic replace, so two processes finishing
    at once both keep their rows (an unlocked read-modify-write loses one's). A file that is not a JSON list is
    moved aside (``manifest.json.corrupt-<time>``) rather than overwritten; ``notes`` says so.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.notes: list[str] = []

    def rows(self) -> list[dict[str, Any]]:
        data, problem = read_json(self.path)
        if problem or not isinstance(data, list):
            return []
        return [row for row in data if isinstance(row, dict)]

    def write(self, run_id: str, rows: Iterable[dict[str, Any]], *, lock_timeout: float | None = None) -> None:
        mine = list(rows)
        with file_lock(self.path, timeout=lock_timeout):
            data, problem = read_json(self.path)
            if problem is None and data is not None and not isinstance(data, list):
                problem = "not a JSON list"
            if problem:
                moved = move_aside(self.path)
                self.notes.append(f"{self.path} was {problem}; kept it as {moved.name} and started a new manifest")
                data = []
            others = [row for row in data or [] if isinstance(row, dict) and row.get("run") != run_id]
            atomic_write_text(self.path, json.dumps(others + mine, ensure_ascii=False, indent=2) + "\n")
