"""Reading a run dir for analysis — read-only: sessions.db is opened so that it cannot be written, and
manifest.json is only read (a corrupt one is reported, never moved aside as a writer would)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._shared.files import read_json

if TYPE_CHECKING:
    from flower_stores import SqliteSessionStore

__all__ = ["AnalyzeError", "RunData", "Transcript", "read_run", "resolve_run_dir"]

Entry = dict[str, Any]

# Exit codes (flower's): a path that holds no run is a usage mistake (2); a run whose files cannot be read is
# a run flower cannot report on (1) — the reason is printed either way.
MISSING = 2
UNREADABLE = 1


class AnalyzeError(Exception):
    """The run dir cannot be analysed; ``message`` is one line that says what is wrong and what to do."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass
class Transcript:
    """One session as stored: its main thread, and its workers (``subagents/agent-<id>`` → entries).

    ``main`` and each worker's entries are parsed as they are iterated (iterable once: the report reads each
    entry while it is fresh, then keeps what it needs), and ``workers`` yields one worker at a time, in key
    order — so no more than one session's main thread and one of its workers are in memory together.
    """

    project_key: str
    session_id: str
    main: Iterable[Entry]
    workers: Iterable[tuple[str, Iterable[Entry]]] = ()


@dataclass
class RunData:
    """A run dir's manifest rows (read at once: one small row per step) and its sessions (read as iterated,
    one at a time: the store can hold gigabytes of transcripts, the report needs one session at a time)."""

    run_dir: Path
    rows: list[dict[str, Any]]
    transcripts: Iterable[Transcript]
    has_db: bool
    has_manifest: bool


def resolve_run_dir(path: Path) -> Path:
    """``path`` itself when it holds a run; its ``runs/`` when ``path`` is a workspace; else an `AnalyzeError`."""
    if not path.exists():
        raise AnalyzeError(
            MISSING, f"no run dir at {path}: nothing has run there yet (pass a run dir: `flower analyze PATH`)"
        )
    if not path.is_dir():
        raise AnalyzeError(
            MISSING, f"{path} is not a directory; pass a run dir (the one holding sessions.db and manifest.json)"
        )
    for candidate in (path, path / "runs"):
        if (candidate / "sessions.db").is_file() or (candidate / "manifest.json").is_file():
            return candidate
    raise AnalyzeError(
        MISSING, f"{path} holds neither sessions.db nor manifest.json; pass a run dir (`flower analyze PATH`)"
    )


def _read_manifest(path: Path) -> list[dict[str, Any]]:
    data, problem = read_json(path)
    if problem is None and data is not None and not isinstance(data, list):
        problem = "not a JSON list of step rows"
    if problem:
        raise AnalyzeError(
            UNREADABLE,
            f"{path} is {problem}; analyze reads it as it is — restore it or move it away to analyze the sessions alone",
        )
    return [row for row in data or [] if isinstance(row, dict)]


def _unreadable(db: Path, exc: Exception) -> AnalyzeError:
    from flower_stores import StoreError

    if isinstance(exc, StoreError):
        return AnalyzeError(UNREADABLE, f"{exc}; analyze opens it read-only and changed nothing")
    if isinstance(exc, sqlite3.Error):
        return AnalyzeError(UNREADABLE, f"cannot read {db}: {exc}; analyze opens it read-only and changed nothing")
    # a payload that is not JSON
    return AnalyzeError(UNREADABLE, f"{db} holds an entry that is not JSON ({exc}); analyze changed nothing")


def _keys(store: SqliteSessionStore) -> list[tuple[str, str, list[str]]]:
    """Every session of the store (project, session id, worker subpaths): keys only, never a payload.

    Synchronous on purpose: the async protocol would start an event loop and hop to a worker thread per
    session, which costs more than the queries on a run of thousands of sessions.
    """
    out: list[tuple[str, str, list[str]]] = []
    for project in store.projects():
        for listed in store.list_sessions_sync(project):
            sid = listed["session_id"]
            out.append((project, sid, store.list_subkeys_sync({"project_key": project, "session_id": sid})))
    return out


def _transcripts(db: Path) -> Iterator[Transcript]:
    """The store's sessions one at a time, in key order; the store is closed when the iteration ends.

    Only reading raises here — opening, listing, or parsing an entry as it is iterated — and whatever it
    raises becomes an `AnalyzeError` that names the file.
    """
    from flower_stores import SqliteSessionStore, StoreError

    errors = (StoreError, sqlite3.Error, ValueError)

    def entries(key: Any) -> Iterator[Entry]:
        try:
            # Only the store's own errors are caught here: the consumer's run in its own frame, not this one.
            yield from store.iter_entries(key) or ()  # type: ignore[misc]  # TypedDicts, as JSON gave them
        except errors as exc:
            raise _unreadable(db, exc) from exc

    def workers(key: dict[str, str], subs: list[str]) -> Iterator[tuple[str, Iterator[Entry]]]:
        for sub in subs:
            yield sub, entries({**key, "subpath": sub})

    try:
        store = SqliteSessionStore(db, read_only=True)
    except errors as exc:
        raise _unreadable(db, exc) from exc
    with store:
        try:
            keys = _keys(store)
        except errors as exc:
            raise _unreadable(db, exc) from exc
        for project, sid, subs in keys:
            key = {"project_key": project, "session_id": sid}
            yield Transcript(project, sid, entries(key), workers(key, subs))


def read_run(run_dir: Path) -> RunData:
    """What analyze needs from ``run_dir`` (already resolved), or an `AnalyzeError`: the manifest is read now,
    the sessions as `RunData.transcripts` is iterated (errors reading them are `AnalyzeError`s too)."""
    db, manifest = run_dir / "sessions.db", run_dir / "manifest.json"
    rows = _read_manifest(manifest) if manifest.is_file() else []
    transcripts: Iterable[Transcript] = _transcripts(db) if db.is_file() else ()
    return RunData(run_dir, rows, transcripts, db.is_file(), manifest.is_file())
