"""One-line descriptions of workbench files, taken from their first lines.

A script says what it is for with ``# desc: one sentence`` (or ``// desc:``, ``-- desc:``, ``; desc:``,
``/* desc: */``, ``<!-- desc: -->``) in its first lines. Without one, the first meaningful comment or
docstring line stands in; notes and artifacts usually start with a Markdown heading, which is exactly that.
Shebangs, encoding declarations and editor modelines are never a description: they say how to run or edit a
file, not what it is for.
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["describe_file", "describe_lines"]

SCAN_LINES = 8
MAX_CHARS = 100

_COMMENT = r"(?:#+|//+|--+|;+|/\*+|<!--)"
_DESC = re.compile(rf"^\s*{_COMMENT}\s*desc\s*[:：]\s*(?P<text>.*?)\s*(?:\*/|-->)?\s*$", re.IGNORECASE)
_COMMENT_LINE = re.compile(rf"^\s*{_COMMENT}\s*(?P<text>.*?)\s*(?:\*/|-->)?\s*$")
_DOCSTRING = re.compile(r"^\s*[rRbBuU]?(?:\"\"\"|''')\s*(?P<text>.*?)\s*(?:\"\"\"|''')?\s*$")
_NOT_A_DESCRIPTION = re.compile(r"^\s*(?:#!|#.*-\*-|#\s*(?:vim?|ex):|#\s*coding[:=]|//\s*@ts-|--\s*!)", re.IGNORECASE)


def describe_lines(lines: list[str]) -> str:
    """The description carried by these first lines of a file, or ``""``."""
    for line in lines:
        match = _DESC.match(line)
        if match:
            return match.group("text").strip()[:MAX_CHARS]
    for line in lines:
        if not line.strip() or _NOT_A_DESCRIPTION.match(line):
            continue
        for pattern in (_COMMENT_LINE, _DOCSTRING):
            match = pattern.match(line)
            if match:
                text = match.group("text").strip(" #/-;*").strip()
                if len(text) > 2:
                    return text[:MAX_CHARS]
                break
        else:
            return ""  # the first line of content is code, not a comment: there is no description
    return ""


def describe_file(path: Path) -> str:
    """The description of ``path`` from its first lines; ``""`` if it has none or cannot be read."""
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            lines = [line.rstrip("\r\n") for _, line in zip(range(SCAN_LINES), handle)]
    except OSError:
        return ""
    return describe_lines(lines)
