"""``load_dotenv``: fill the process environment from six sources, per key, first value wins."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from . import _paths
from ._read import read_claude_settings, read_env_file

__all__ = ["PROCESS", "Source", "load_dotenv", "load_notes", "source_of"]

PROCESS = "process environment"


@dataclass(frozen=True)
class Source:
    label: str  # shown to the user: a file path, or "Claude Code settings (<path>)"
    path: Path
    claude_settings: bool = False


# Where each key this module assigned came from, with the value it assigned: a key whose value has changed
# since (someone exported it) is reported as coming from the process environment.
_sources: dict[str, tuple[str, str]] = {}
# What went wrong during the most recent load.
_notes: list[str] = []


def _auto_sources() -> Iterator[Source]:
    flower_env = os.environ.get("FLOWER_ENV")
    if flower_env:
        path = Path(flower_env)  # relative to the current directory, as a shell user would mean it
        yield Source(str(path.resolve()), path)
    yield Source(str(Path.cwd() / ".env"), Path.cwd() / ".env")
    user = _paths.user_env_path()
    yield Source(str(user), user)
    root = _paths.checkout_root()
    if root is not None:
        yield Source(str(root / ".env"), root / ".env")
    for settings in _paths.claude_settings_paths():
        yield Source(f"Claude Code settings ({settings})", settings, claude_settings=True)


def load_dotenv(path: str | os.PathLike[str] | None = None, *, override: bool = False) -> dict[str, str]:
    """Load credentials and settings into ``os.environ``; return the keys this call assigned.

    Without ``path``: process environment > ``$FLOWER_ENV`` > ``./.env`` > the user file
    (``${XDG_CONFIG_HOME:-~/.config}/flower/.env``) > the source checkout's ``.env`` > the nine known keys of
    Claude Code's ``~/.claude/settings.local.json`` then ``settings.json``. Per key, the first value wins; a
    variable already in the process environment is never overwritten unless ``override``. An empty value
    still claims its key. With ``path``: that file alone, no fallback. Bad files are skipped with a note
    (`load_notes`), never an exception.
    """
    _notes.clear()
    sources = [Source(str(Path(path).resolve()), Path(path))] if path is not None else list(_auto_sources())
    assigned: dict[str, str] = {}
    for source in sources:
        if source.claude_settings:
            values = read_claude_settings(source.path)
        else:
            found = read_env_file(source.path)
            _notes.extend(found.notes)
            values = found.values
        for key, value in values.items():
            if key in assigned or (key in os.environ and not override):
                continue
            os.environ[key] = value
            assigned[key] = value
            _sources[key] = (source.label, value)
    return assigned


def load_notes() -> list[str]:
    """One-line notes about files the most recent `load_dotenv` had to skip or partly ignore."""
    return list(_notes)


def source_of(key: str) -> str | None:
    """Where the current value of ``key`` came from (``None`` when it is unset)."""
    if key not in os.environ:
        return None
    label, value = _sources.get(key, (PROCESS, ""))
    return label if os.environ[key] == value else PROCESS
