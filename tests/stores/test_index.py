"""`SessionIndex`: what flower asks a store beyond the SDK protocol, answered by every store and by the layers
over any backend (delegated when the backend can answer, computed from its protocol methods otherwise)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import anyio
import pytest
from claude_agent_sdk import InMemorySessionStore
from stores._transcripts import Transcript

from flower_stores import (
    FencedSessionStore,
    LeaseOwner,
    PostgresSessionStore,
    PruningSessionStore,
    QueryNotSupported,
    SessionIndex,
    SessionLeases,
    SqliteSessionStore,
    StoreError,
    TrimmingSessionStore,
    TrimPolicy,
    session_index,
)

KEY: Any = {"project_key": "-ws", "session_id": "s1"}
SUB: Any = {**KEY, "subpath": "subagents/agent-a1"}


def _session() -> Transcript:
    t = Transcript()
    t.user("go")
    t.bash("git status", "clean")
    t.api_error()  # a synthetic error: zero usage, passed over by last_context
    t.user("and now?")
    return t


async def _filled(store: Any) -> Transcript:
    t = _session()
    await store.append(KEY, t.entries[:3])
    await store.append(KEY, t.entries[3:])
    await store.append(SUB, [{"type": "user", "uuid": "sub-1"}, {"type": "user", "uuid": "sub-2"}])
    await store.append({"project_key": "-other", "session_id": "s9"}, [{"type": "user", "uuid": "o1"}])
    return t


@pytest.mark.parametrize("layer", [TrimmingSessionStore, PruningSessionStore])
async def test_the_layers_answer_over_a_plain_in_memory_store(layer: type, tmp_path: Path) -> None:
    inner = InMemorySessionStore()
    store = layer(inner, tmp_path)
    t = await _filled(store)
    assert isinstance(store, SessionIndex)
    assert store.has_session("-ws", "s1") and not store.has_session("-ws", "unknown")
    assert not store.has_session("-nowhere", "s1")
    assert store.has_entry("-ws", "s1", t.entries[0]["uuid"]) and store.has_entry("-ws", "s1", t.entries[-1]["uuid"])
    assert not store.has_entry("-ws", "s1", "sub-1")  # a subagent's entry is not the main transcript's
    assert not store.has_entry("-ws", "unknown", t.entries[0]["uuid"])
    assert store.last_context("-ws", "s1") == 100  # the Bash call's usage; the synthetic error's zero is passed over
    assert store.last_context("-ws", "s1", scan=2) == 0  # the newest two entries carry no usage
    assert store.last_context("-ws", "unknown") == 0
    # Counting one project loads its transcripts (main and subagent); the whole store needs projects().
    assert store.counts("-ws") == (2, len(t.entries) + 2)
    assert store.counts("-other") == (1, 1) and store.counts("-none") == (0, 0)
    with pytest.raises(
        QueryNotSupported, match=r"InMemorySessionStore cannot list its projects.*counts\(project_key\)"
    ):
        store.counts()
    assert store.where == "InMemorySessionStore"


async def test_the_answers_are_the_sqlite_stores_own(tmp_path: Path) -> None:
    """The same questions over SQLite and over in-memory give the same answers: one meaning, two ways."""
    sqlite = SqliteSessionStore(tmp_path / "sessions.db")
    memory = PruningSessionStore(InMemorySessionStore(), tmp_path)
    t = await _filled(sqlite)
    await _filled(memory)
    questions = [
        ("has_session", ("-ws", "s1")),
        ("has_session", ("-ws", "nope")),
        ("has_entry", ("-ws", "s1", t.entries[1]["uuid"])),
        ("has_entry", ("-ws", "s1", "sub-1")),
        ("last_context", ("-ws", "s1")),
        ("last_context", ("-ws", "s1", 2)),
        ("counts", ("-ws",)),
        ("counts", ("-other",)),
    ]
    for name, args in questions:
        assert getattr(sqlite, name)(*args) == getattr(memory, name)(*args), (name, args)
    sqlite.close()


async def test_sqlite_counts_equal_what_doctor_counted_with_raw_sql(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    with SqliteSessionStore(db) as store:
        assert store.counts() == (0, 0)
        await _filled(store)
        await store.delete({"project_key": "-other", "session_id": "s9"})
        await store.append(KEY, [{"type": "tag"}])  # no uuid: still an entry
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        raw = (
            conn.execute("select count(*) from meta").fetchone()[0],
            conn.execute("select count(*) from entries").fetchone()[0],
        )
    with SqliteSessionStore(db, read_only=True) as store:  # `flower doctor` only looks
        assert store.counts() == raw == (2, len(_session().entries) + 3)
        assert store.counts("-ws") == raw and store.counts("-other") == (0, 0)
        assert store.where == str(db)


async def test_a_layer_delegates_to_a_backend_that_answers_itself(tmp_path: Path) -> None:
    class Answers(InMemorySessionStore):
        asked: list[str] = []

        def has_session(self, project_key: str, session_id: str) -> bool:
            self.asked.append("has_session")
            return True

        def counts(self, project_key: str | None = None) -> tuple[int, int]:
            self.asked.append(f"counts {project_key}")
            return (7, 70)

    inner = Answers()
    store = PruningSessionStore(inner, tmp_path)
    assert store.has_session("-ws", "anything") and store.counts() == (7, 70) and store.counts("-ws") == (7, 70)
    assert inner.asked == ["has_session", "counts None", "counts -ws"]
    assert not store.has_entry("-ws", "s1", "u")  # the questions it cannot answer are still computed


async def test_the_computed_answers_work_from_inside_a_running_event_loop(tmp_path: Path) -> None:
    """The Runtime asks between messages, inside its event loop: the backend's coroutines run on another one."""
    store = PruningSessionStore(InMemorySessionStore(), tmp_path)
    t = await _filled(store)

    async def ask() -> bool:
        return store.has_entry("-ws", "s1", t.entries[0]["uuid"])

    async with anyio.create_task_group() as tg:
        tg.start_soon(ask)
    assert await ask()


def test_session_index_of_a_bare_store(tmp_path: Path) -> None:
    inner = InMemorySessionStore()
    anyio.run(inner.append, KEY, [{"type": "user", "uuid": "u1"}])
    index = session_index(inner)
    assert isinstance(index, SessionIndex) and index.has_session("-ws", "s1") and index.has_entry("-ws", "s1", "u1")
    assert index.counts("-ws") == (1, 1)
    with SqliteSessionStore(tmp_path / "s.db") as sqlite:
        assert session_index(sqlite) is sqlite  # a store that is one is its own index
    with pytest.raises(TypeError, match="needs a session store"):
        session_index(42)


def test_a_store_without_list_sessions_cannot_be_counted_but_answers_the_rest(tmp_path: Path) -> None:
    class Minimal:
        def __init__(self) -> None:
            self.inner = InMemorySessionStore()

        async def append(self, key: Any, entries: Any) -> None:
            await self.inner.append(key, entries)

        async def load(self, key: Any) -> Any:
            return await self.inner.load(key)

    store = TrimmingSessionStore(Minimal(), tmp_path)
    anyio.run(store.append, KEY, [{"type": "user", "uuid": "u1"}])
    assert store.has_session("-ws", "s1") and not store.has_session("-ws", "s2")  # from load
    with pytest.raises(QueryNotSupported, match="no list_sessions"):
        store.counts("-ws")
    with pytest.raises(StoreError):  # it is a StoreError, so doctor's one-line handling covers it
        store.counts("-ws")
    with pytest.raises(NotImplementedError):
        store.counts("-ws")


async def test_every_store_type_satisfies_the_protocols(tmp_path: Path, pg_url: str) -> None:
    sqlite = SqliteSessionStore(tmp_path / "sessions.db")
    pg = PostgresSessionStore(pg_url, schema=f"index_{tmp_path.name.replace('-', '_')}"[:60])
    try:
        stores: list[Any] = [
            sqlite,
            pg,
            TrimmingSessionStore(sqlite, tmp_path),
            PruningSessionStore(pg, tmp_path, policy=TrimPolicy()),
            TrimmingSessionStore(InMemorySessionStore(), tmp_path),
            PruningSessionStore(InMemorySessionStore(), tmp_path),
        ]
        for store in stores:
            assert isinstance(store, SessionIndex), store
        for store in stores[:4]:
            assert isinstance(store, SessionLeases), store
            lease = await store.acquire_lease("-ws", f"protocol-{id(store)}", LeaseOwner.this_process("t"))
            view = store.fenced(lease)
            assert isinstance(view, FencedSessionStore)
            assert isinstance(view, SessionIndex) and isinstance(view, SessionLeases)
            assert view.where == store.where
        for store in stores[4:]:  # an in-memory backend grants no leases, so neither does a layer over it
            assert not isinstance(store, SessionLeases) and not hasattr(store, "fenced")
        assert pg.where.startswith("postgresql://") and "secret" not in pg.where
    finally:
        sqlite.close()
        pg.close()
        import psycopg

        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{pg.schema}" CASCADE')


async def test_postgres_counts_one_project(pg_store: Any) -> None:
    store = pg_store()
    t = await _filled(store)
    assert store.counts() == (3, len(t.entries) + 3)
    assert store.counts("-ws") == (2, len(t.entries) + 2) and store.counts("-other") == (1, 1)
    assert store.counts("-w") == (0, 0)  # a prefix of a project key is not that project
