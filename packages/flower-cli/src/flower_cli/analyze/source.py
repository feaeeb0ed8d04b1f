"""Reading a run dir for analysis — read-only: sessions.db is opened so that it cannot be written, and
manifest.json is only read (a corrupt one is reported, never moved aside as a writer would)."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._shared.files import read_json

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
    """One session as stored: its main thread and its workers (``subagents/agent-<id>`` → entries)."""

    project_key: str
    session_id: str
    main: list[Entry]
    workers: dict[str, list[Entry]] = field(default_factory=dict)


@dataclass
class RunData:
    run_dir: Path
    rows: list[dict[str, Any]]
    transcripts: list[Transcript]
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


async def _read_store(db: Path) -> list[Transcript]:
    from flower_stores import SqliteSessionStore

    out: list[Transcript] = []
    with SqliteSessionStore(db, read_only=True) as store:
        for project in store.projects():
            for listed in await store.list_sessions(project):
                sid = listed["session_id"]
                key: Any = {"project_key": project, "session_id": sid}
                main = store.load_sync(key) or []
                workers: dict[str, list[Entry]] = {}
                for sub in await store.list_subkeys(key):
                    sub_key: Any = {**key, "subpath": sub}
                    entries = store.load_sync(sub_key)
                    if entries:
                        workers[sub] = [dict(e) for e in entries]
                out.append(Transcript(project, sid, [dict(e) for e in main], workers))
    return out


def read_run(run_dir: Path) -> RunData:
    """Everything analyze needs from ``run_dir`` (already resolved), or an `AnalyzeError`."""
    import anyio

    from flower_stores import StoreError

    db, manifest = run_dir / "sessions.db", run_dir / "manifest.json"
    rows = _read_manifest(manifest) if manifest.is_file() else []
    transcripts: list[Transcript] = []
    if db.is_file():
        try:
            transcripts = anyio.run(_read_store, db)
        except StoreError as exc:
            raise AnalyzeError(UNREADABLE, f"{exc}; analyze opens it read-only and changed nothing") from exc
        except sqlite3.Error as exc:
            raise AnalyzeError(
                UNREADABLE, f"cannot read {db}: {exc}; analyze opens it read-only and changed nothing"
            ) from exc
        except ValueError as exc:  # a payload that is not JSON
            raise AnalyzeError(
                UNREADABLE, f"{db} holds an entry that is not JSON ({exc}); analyze changed nothing"
            ) from exc
    return RunData(run_dir, rows, transcripts, db.is_file(), manifest.is_file())
