"""Is this tool call reading a spill file? Then its output must come back whole, never be spilled again.

The pointer tells the model to Read the spill file; if that Read were spilled too, the model would get a
pointer to the same file and loop. Matching the absolute path as a string is not enough: the model also
writes relative paths, ``./…``, ``~/…``, ``cd spill && cat x.txt``, ``head -c 9000 …``, globs. So
two checks, either suffices:

- a file name of the spill form (16 hex digits, ``.txt``) that exists in the spill directory;
- a path-looking token that, resolved against the call's working directory, lies in the spill directory.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["reads_spill"]

_SPILL_NAME = re.compile(r"(?<![0-9a-fA-F])([0-9a-f]{16}(?:[0-9a-f]{48})?)\.txt")
_TOKEN_SPLIT = re.compile(r"[\s'\"`=<>|;&()]+")


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _tokens(text: str) -> Iterator[str]:
    yield text
    try:
        yield from shlex.split(text, comments=False, posix=True)
    except ValueError:
        pass  # unbalanced quotes: the regex split below still sees the words
    yield from (t for t in _TOKEN_SPLIT.split(text) if t)


def _inside(token: str, base: Path, spill: Path) -> bool:
    if "/" not in token and token not in ("spill", "."):
        return False
    token = token.rstrip("*?")  # a glob's directory part is still a path into the directory
    candidate = Path(os.path.expanduser(token))
    if not candidate.is_absolute():
        candidate = base / candidate
    try:
        resolved = candidate.resolve()
    except (OSError, RuntimeError):
        return False
    return resolved == spill or resolved.is_relative_to(spill)


def reads_spill(tool_input: Any, cwd: Path, spill_dir: Path) -> bool:
    """True when any string of ``tool_input`` refers to a file in ``spill_dir`` or to the directory itself."""
    if not spill_dir.is_dir():
        return False
    spill = spill_dir.resolve()
    base = Path(cwd)
    # Any path into the spill directory names it ("…/spill/…"), unless the call already runs inside it.
    runs_inside = base.resolve().is_relative_to(spill)
    for text in _strings(tool_input):
        for name in _SPILL_NAME.findall(text):
            if (spill / f"{name}.txt").is_file():
                return True
        if "spill" not in text and not runs_inside:
            continue
        if any(_inside(token, base, spill) for token in _tokens(text)):
            return True
    return False
