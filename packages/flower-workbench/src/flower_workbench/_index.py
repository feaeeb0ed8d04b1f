"""What the workbench holds, as data and as the text of INDEX.md."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ._describe import describe_file

__all__ = ["Entry", "Fingerprint", "Listing", "fingerprint", "human_size", "list_files", "render_index", "scan"]

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


Listing = list[tuple[Path, os.stat_result]]


def list_files(directory: Path) -> Listing:
    """Regular files under ``directory`` with their stat, sorted, skipping hidden ones (swap files, our temps).

    One walk and one stat per file serve both the index (sizes) and the staleness check (mtimes).
    """
    if not directory.is_dir():
        return []
    found: Listing = []
    for path in sorted(directory.rglob("*")):
        if any(part.startswith(".") for part in path.relative_to(directory).parts):
            continue
        try:
            st = path.stat()
        except OSError:
            continue  # removed while we looked
        if stat.S_ISREG(st.st_mode):
            found.append((path, st))
    return found


def scan(files: Listing, show: Callable[[Path], str]) -> list[Entry]:
    return [Entry(show(path), describe_file(path), st.st_size) for path, st in files]


def fingerprint(listings: list[Listing]) -> Fingerprint:
    """Names, sizes and mtimes: enough to tell that INDEX.md is stale without reading any file."""
    return tuple((str(path), st.st_size, st.st_mtime_ns) for files in listings for path, st in files)


def render_index(sections: list[tuple[str, list[Entry]]]) -> str:
    lines = [INDEX_TITLE, "", INDEX_NOTE, ""]
    for title, entries in sections:
        lines.append(f"## {title} ({len(entries)})")
        lines.extend(entry.line(placeholder=NO_DESCRIPTION) for entry in entries)
        if not entries:
            lines.append(NOTHING)
        lines.append("")
    return "\n".join(lines)
