"""Sessions a store holds for other paths: a moved or copied project, whose transcripts the harness filed under
the workspace's old path, must not look empty.

The harness keys each transcript by a project key made from the workspace's path (lossy: ``/`` and ``.``
both become ``-``), so the path is read back from a transcript's own entries (their ``cwd``), and the key
shown only when no entry names one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import anyio

from ..._shared.words import counted

__all__ = ["Elsewhere", "elsewhere", "elsewhere_hint"]

_SCAN = 20  # entries read from one transcript to find its path: the first user entry carries it


@dataclass(frozen=True)
class Elsewhere:
    """One other path's sessions in the store: the path (or, when unknown, its project key) and how many."""

    project_key: str
    path: str
    sessions: int


def elsewhere(store: Any, project_key: str) -> list[Elsewhere]:
    """Every project of ``store`` but ``project_key`` that holds sessions, most sessions first ([] when the
    store cannot list its projects)."""
    projects = getattr(store, "projects", None)
    if not callable(projects):
        return []
    found: list[Elsewhere] = []
    for key in projects():
        if key == project_key:
            continue
        listed = anyio.run(store.list_sessions, key)
        if listed:
            found.append(Elsewhere(key, _path_of(store, key, listed) or key, len(listed)))
    return sorted(found, key=lambda e: (-e.sessions, e.path))


def elsewhere_hint(others: list[Elsewhere]) -> str:
    """The line under "no sessions for …": which other paths have sessions and how to see them."""
    named = ", ".join(f"{e.path} ({counted(e.sessions, 'session')})" for e in others[:3])
    more = f" and {len(others) - 3} more" if len(others) > 3 else ""
    return (
        f"it holds sessions of other paths: {named}{more} (a moved or copied project keeps its old path); "
        "`flower sessions --all` lists them, and `flower analyze` reads them all"
    )


def _path_of(store: Any, project_key: str, listed: list[dict[str, Any]]) -> str | None:
    """The workspace path a transcript of ``project_key`` names (its entries' ``cwd``), if any."""
    load = getattr(store, "load_sync", None)
    if not callable(load):
        return None
    entries = load({"project_key": project_key, "session_id": str(listed[0]["session_id"])}) or []
    for entry in entries[:_SCAN]:
        cwd = entry.get("cwd") if isinstance(entry, dict) else None
        if isinstance(cwd, str) and cwd:
            return cwd
    return None
