"""Reading a run for analysis, read-only, from one of two sources.

- A run dir: sessions.db is opened so that it cannot be written, and manifest.json is only read (a corrupt one
  is reported, never moved aside as a writer would).
- A store's run records (``flower analyze --store URL --run ID``): the run's rows and lineage as the store keeps
  them (`flower_stores.RunRecords`, a fleet run's), and the sessions they name, read from the same store opened
  read-only (nothing is created or migrated there).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from flower_stores import SqliteSessionStore, StoreError, StoreUrlError, describe_store_url, store_from_url

from .._shared.files import read_json

__all__ = ["AnalyzeError", "RunData", "Transcript", "read_run", "read_store_run", "resolve_run_dir"]

Entry = dict[str, Any]

# Exit codes (flower's): a path that holds no run is a usage mistake (2); a run whose files cannot be read is
# a run flower cannot report on (1) — the reason is printed either way.
MISSING = 2
UNREADABLE = 1
# A store that cannot be reached or opened (no server, a wrong password, no driver): configuration to fix.
UNUSABLE = 3


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
    # How the report names its source and the two halves of it (a store's run records read differently).
    title: str | None = None
    db_name: str = "sessions.db"
    rows_name: str = "manifest.json"
    row_name: str = "manifest row"


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


def _named_sessions(rows: list[dict[str, Any]], lineage: dict[str, str]) -> set[str]:
    """Every session a run's records name: each row's live and retired sessions and its attempts', the lineage's."""
    out = {sid for sid in lineage.values() if sid}
    for row in rows:
        named = [row.get("session_id"), *(row.get("retired") or [])]
        named += [a.get("session_id") for a in row.get("attempt_log") or [] if isinstance(a, dict)]
        out.update(sid for sid in named if isinstance(sid, str) and sid)
    return out


def _store_transcripts(store: Any, where: str, wanted: set[str]) -> Iterator[Transcript]:
    """The sessions of ``wanted`` found in ``store`` (in any project), one at a time; closes the store at the end."""

    def failed(exc: Exception) -> AnalyzeError:
        return AnalyzeError(UNREADABLE, f"cannot read {where}: {exc}; analyze opened it read-only and changed nothing")

    async def keys() -> list[tuple[str, str, list[str]]]:
        out: list[tuple[str, str, list[str]]] = []
        for project in store.projects():
            for listed in await store.list_sessions(project):
                sid = listed["session_id"]
                if sid in wanted:
                    out.append((project, sid, await store.list_subkeys({"project_key": project, "session_id": sid})))
        return out

    def entries(key: Any) -> list[Entry]:
        try:
            return list(store.load_sync(key) or ())
        except (StoreError, ValueError) as exc:
            raise failed(exc) from exc

    def workers(key: dict[str, str], subs: list[str]) -> Iterator[tuple[str, list[Entry]]]:
        for sub in subs:
            loaded = entries({**key, "subpath": sub})
            if loaded:
                yield sub, loaded

    with store:
        try:
            found = anyio.run(keys) if wanted else []
        except (StoreError, ValueError) as exc:
            raise failed(exc) from exc
        for project, sid, subs in found:
            key = {"project_key": project, "session_id": sid}
            yield Transcript(project, sid, entries(key), workers(key, subs))


def read_store_run(url: str, run_id: str) -> RunData:
    """A run's records and sessions from the store at ``url`` (read-only), or an `AnalyzeError`: a malformed URL
    or a run the store does not know is exit 2, a store that cannot be opened exit 3, one that fails to read 1."""
    try:
        store = store_from_url(url, read_only=True)
    except StoreUrlError as exc:
        raise AnalyzeError(MISSING, f"{exc} (--store / FLOWER_STORE_URL)") from exc
    except StoreError as exc:
        raise AnalyzeError(UNUSABLE, str(exc)) from exc
    where = describe_store_url(url)
    try:
        rows, lineage, known = store.run_rows(run_id), store.lineage(run_id), store.run_ids()
    except ValueError as exc:  # a run id the store refuses to look up (empty)
        store.close()
        raise AnalyzeError(MISSING, f"--run {run_id!r}: {exc}") from exc
    except StoreError as exc:
        store.close()
        raise AnalyzeError(UNREADABLE, f"cannot read the run records of {where}: {exc}") from exc
    if run_id not in known:
        store.close()
        listed = ", ".join(known[:5]) + (f" (and {len(known) - 5} more)" if len(known) > 5 else "")
        hint = f"runs there, newest first: {listed}" if known else "no run has recorded its steps there"
        raise AnalyzeError(MISSING, f"no run {run_id!r} in the store at {where}; {hint}")
    return RunData(
        run_dir=Path(run_id),
        rows=rows,
        transcripts=_store_transcripts(store, where, _named_sessions(rows, lineage)),
        has_db=True,
        has_manifest=bool(rows),
        title=f"{where} · run {run_id}",
        db_name="the store",
        rows_name="the run's records",
        row_name="step row (only in the run's lineage)",
    )
