"""What the workbench holds, as data and as the text of INDEX.md."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ._describe import describe_file

__all__ = ["Entry", "Fingerprint", "fingerprint", "human_size", "render_index", "scan"]

INDEX_TITLE = "# Workbench index"
INDEX_NOTE = "> Generated — do not edit by hand. A script whose first line is `# desc: one sentence` shows up here."
NO_DESCRIPTION = "(no description)"
NOTHING = "- (none)"

Fingerprint = tuple[tuple[str, int, int], ...]


@dataclass(frozen=True)
class Entry:
    """One file of a workbench section, with the path as the model should see it."""

    shown: str
    description: str
    size: int

    def line(self, *, placeholder: str | None = None) -> str:
        desc = self.description or placeholder
        return f"- `{self.shown}`" + (f" — {desc}" if desc else "") + f" ({human_size(self.size)})"


def human_size(n: int) -> str:
    if n < 1024:
        return f"{n}B"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f}K"
    return f"{n / (1024 * 1024):.1f}M"


def _files(directory: Path) -> list[Path]:
    """Regular files under ``directory``, sorted, skipping hidden ones (editor swap files, our temp files)."""
    if not directory.is_dir():
        return []
    found: list[Path] = []
    for path in sorted(directory.rglob("*")):
        if any(part.startswith(".") for part in path.relative_to(directory).parts):
            continue
        if path.is_file():
            found.append(path)
    return found


def scan(directory: Path, show: Callable[[Path], str]) -> list[Entry]:
    entries = []
    for path in _files(directory):
        try:
            size = path.stat().st_size
        except OSError:
            continue  # removed while we looked
        entries.append(Entry(show(path), describe_file(path), size))
    return entries


def fingerprint(directories: list[Path]) -> Fingerprint:
    """Names, sizes and mtimes: enough to tell that INDEX.md is stale without reading any file."""
    items: list[tuple[str, int, int]] = []
    for directory in directories:
        for path in _files(directory):
            try:
                st = os.stat(path)
            except OSError:
                continue
            items.append((str(path), st.st_size, st.st_mtime_ns))
    return tuple(items)


def render_index(sections: list[tuple[str, list[Entry]]]) -> str:
    lines = [INDEX_TITLE, "", INDEX_NOTE, ""]
    for title, entries in sections:
        lines.append(f"## {title} ({len(entries)})")
        lines.extend(entry.line(placeholder=NO_DESCRIPTION) for entry in entries)
        if not entries:
            lines.append(NOTHING)
        lines.append("")
    return "\n".join(lines)

