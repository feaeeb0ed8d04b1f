"""Reading one .env file with python-dotenv's parser, turning every problem into a note, never a crash."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
from pathlib import Path

from dotenv.parser import parse_stream

from ._keys import KNOWN_KEYS

__all__ = ["FileValues", "read_claude_settings", "read_env_file"]


@dataclass
class FileValues:
    values: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def read_env_file(path: Path) -> FileValues:
    """The ``K=V`` pairs of ``path`` (no ``${VAR}`` interpolation), or notes saying why it was skipped."""
    out = FileValues()
    if not path.exists():
        return out
    if path.is_dir():
        out.notes.append(f"skipped {path}: it is a directory, not a .env file")
        return out
    try:
        raw = path.read_bytes()
    except OSError as exc:
        out.notes.append(f"skipped {path}: cannot read it ({exc.strerror or exc}); check its permissions")
        return out
    if b"\x00" in raw:
        out.notes.append(f"skipped {path}: it looks binary, not a text .env file")
        return out
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        out.notes.append(f"skipped {path}: not UTF-8 (line {line}); re-save it as UTF-8")
        return out
    text = text.removeprefix("\ufeff")
    for binding in parse_stream(io.StringIO(text)):
        if binding.error:
            out.notes.append(f"{path}: line {binding.original.line} is not KEY=VALUE and was ignored")
            continue
        if binding.key is None or binding.value is None:
            continue  # comments, blank lines, a bare KEY without '='
        out.values[binding.key] = binding.value
    return out


def read_claude_settings(path: Path) -> dict[str, str]:
    """The known keys of the ``env`` block of a Claude Code settings file; anything wrong → nothing.

    Only the nine credential/model keys are borrowed: permission rules, hooks and the rest of the file stay
    out, so the portable promise (``setting_sources=[]``) holds. Empty values are not borrowed.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return {}
    env = data.get("env") if isinstance(data, dict) else None
    if not isinstance(env, dict):
        return {}
    return {k: str(env[k]) for k in KNOWN_KEYS if env.get(k) not in (None, "", False)}
