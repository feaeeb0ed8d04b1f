"""Moving a large tool output to a content-addressed file and leaving a pointer in its place."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ._files import atomic_write_text

__all__ = ["HEAD_CHARS", "pointer_text", "shrink", "spill_pointers", "stash"]

HEAD_CHARS = 400

# Claude Code's own large-output handling: above ~30 KB the harness truncates `stdout` and keeps the whole
# output in a file under ~/.claude/projects/…/tool-results/. Those keys point at it.
_PERSISTED_PATH = "persistedOutputPath"
_PERSISTED_SIZE = "persistedOutputSize"


def stash(spill_dir: Path, text: str) -> Path:
    """Write ``text`` to ``spill_dir/<sha256[:16]>.txt`` unless that file already holds it; return the path.

    Content-addressed, so a repeated output costs no disk and gives the same pointer. On a (vanishingly
    unlikely) prefix collision with different content the full digest names the file instead.
    """
    digest = hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()
    for name in (digest[:16], digest):
        path = spill_dir / f"{name}.txt"
        try:
            if path.read_text(encoding="utf-8", errors="surrogateescape") == text:
                return path
        except FileNotFoundError:
            spill_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            atomic_write_text(path, text, mode=0o600)  # tool output may hold secrets
            return path
        except (OSError, UnicodeDecodeError):
            continue
    raise OSError(f"cannot stash a tool output in {spill_dir}")


def pointer_text(size: int, shown: str, text: str) -> str:
    """The one-line pointer plus the first ``HEAD_CHARS`` characters, on one line so it stays small."""
    head = text[:HEAD_CHARS].replace("\r", " ").replace("\n", " ")
    return (
        f"[output of {size} characters saved to {shown} — Read it for the full text, Grep it to find something]\n"
        f"first {HEAD_CHARS} characters: {head}"
    )


_POINTER = re.compile(r"\[output of (\d+) characters saved to (.+?) — Read it for the full text")


def spill_pointers(text: str) -> list[tuple[int, str]]:
    """``(size, shown path)`` of every spill pointer (written by `pointer_text`) in a tool result's text.

    For readers of stored transcripts (``flower analyze``): how many characters of tool output the spill
    guard kept out of the context. One result can hold several (a Bash call's stdout and stderr).
    """
    return [(int(m.group(1)), m.group(2)) for m in _POINTER.finditer(text)]


def _full_output(response: dict[str, Any], key: str) -> str:
    """Bash output the harness already truncated: the whole text is in its persisted file, if still there."""
    value = response[key]
    persisted = response.get(_PERSISTED_PATH)
    if key == "stdout" and isinstance(persisted, str):
        try:
            return Path(persisted).read_text(encoding="utf-8", errors="surrogateescape")
        except OSError:
            pass
    return value  # type: ignore[no-any-return]


def shrink(value: Any, threshold: int, spill: Callable[[str], str]) -> tuple[Any, bool]:
    """``value`` with every string at or above ``threshold`` replaced by ``spill(text)``; and whether any was.

    The shape is kept exactly — same keys, same nesting — because the harness ignores a replacement that does
    not match the tool's output schema. Lists are left alone (they may hold image blocks).
    """
    if isinstance(value, str):
        return (spill(value), True) if len(value) >= threshold else (value, False)
    if not isinstance(value, dict):
        return value, False
    changed = False
    out: dict[str, Any] = {}
    for key, item in value.items():
        if isinstance(item, str) and len(item) >= threshold:
            out[key] = spill(_full_output(value, key))
            changed = True
        elif isinstance(item, dict):
            out[key], sub = shrink(item, threshold, spill)
            changed = changed or sub
        else:
            out[key] = item
    if changed and _PERSISTED_PATH in out:
        # Our pointer replaces the harness's: keeping its keys would make it wrap our pointer in its own
        # "<persisted-output>" preview of a file that lives outside the workspace (and outside the store).
        out.pop(_PERSISTED_PATH, None)
        out.pop(_PERSISTED_SIZE, None)
    return out, changed
