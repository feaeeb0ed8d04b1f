"""SqliteSessionStore(read_only=True): inspection that never changes the file, its directory or its journal."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from flower_stores import SqliteSessionStore, StoreError

KEY: Any = {"project_key": "-ws", "session_id": "s1"}
SUB: Any = {**KEY, "subpath": "subagents/agent-a1"}


def _fingerprint(directory: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(directory.iterdir())}


async def _filled(db: Path) -> None:
    with SqliteSessionStore(db) as store:
        await store.append(KEY, [{"type": "user", "uuid": "a", "message": {"role": "user", "content": "hi"}}])
        await store.append(SUB, [{"type": "user", "uuid": "x"}])


async def test_reads_everything_and_changes_nothing(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    await _filled(db)
    before = _fingerprint(tmp_path)
    assert set(before) == {"sessions.db"}, "a closed store leaves no side files"
    with SqliteSessionStore(db, read_only=True) as store:
        assert store.projects() == ["-ws"]
        assert [s["session_id"] for s in await store.list_sessions("-ws")] == ["s1"]
        assert await store.list_subkeys(KEY) == ["subagents/agent-a1"]
        loaded = await store.load(KEY)
        assert loaded is not None and loaded[0]["uuid"] == "a"
        assert store.has_session("-ws", "s1")
    assert _fingerprint(tmp_path) == before, "no byte changed and no -wal/-shm file was left behind"


async def test_writes_are_refused(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    await _filled(db)
    with SqliteSessionStore(db, read_only=True) as store:
        with pytest.raises(StoreError, match="read-only"):
            await store.append(KEY, [{"type": "user", "uuid": "b"}])
        with pytest.raises(StoreError, match="read-only"):
            await store.delete(KEY)
    with SqliteSessionStore(db, read_only=True) as store:
        assert len(await store.load(KEY) or []) == 1


async def test_sees_what_a_live_writer_has_not_checkpointed(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    await _filled(db)
    with SqliteSessionStore(db) as writer:
        await writer.append(KEY, [{"type": "assistant", "uuid": "b"}])  # sits in the -wal while the writer lives
        with SqliteSessionStore(db, read_only=True) as reader:
            assert [e["uuid"] for e in await reader.load(KEY) or []] == ["a", "b"]


def test_missing_file_is_a_clear_error_and_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "runs" / "sessions.db"
    with pytest.raises(StoreError, match="no session store at"):
        SqliteSessionStore(missing, read_only=True)
    assert not (tmp_path / "runs").exists()


def test_a_file_that_is_not_a_database_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "sessions.db"
    bad.write_bytes(b"this is not sqlite at all, just some bytes" * 50)
    with pytest.raises(StoreError, match="not a readable SQLite database"):
        SqliteSessionStore(bad, read_only=True)
    assert bad.read_bytes().startswith(b"this is not sqlite")


def test_another_sqlite_database_is_not_a_session_store(tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE t (x)")
    with pytest.raises(StoreError, match="not a session store"):
        SqliteSessionStore(other, read_only=True)
