"""The run log and inbox (what a run publishes, what is sent to it) on real SQLite files and a real PostgreSQL
server: numbering, bounds, heads, reading from an offset, following, taking messages once, liveness by lease."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from flower_stores import (
    LeaseOwner,
    PruningSessionStore,
    RunEventLog,
    RunInbox,
    SqliteSessionStore,
    StoreError,
    bound_event,
    follow_events,
)
from flower_stores.events import MAX_EVENT_CHARS, MAX_TOOL_OUTPUT_CHARS


@pytest.fixture(params=["sqlite", "postgres"])
def make(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[..., Any]]:
    """``make()`` a fresh store of the parametrised backend; ``make(like=store)`` another on the same data."""
    opened: list[SqliteSessionStore] = []
    if request.param == "postgres":
        pg_store = request.getfixturevalue("pg_store")
        yield lambda like=None, **options: pg_store(schema=like.schema if like is not None else None, **options)
        return

    def sqlite(like: Any = None, **options: Any) -> SqliteSessionStore:
        store = SqliteSessionStore(like.path if like is not None else tmp_path / f"s{len(opened)}.db", **options)
        opened.append(store)
        return store

    yield sqlite
    for store in opened:
        store.close()


def test_events_are_numbered_per_run_and_read_from_an_offset(make: Callable[..., Any]) -> None:
    store = make()
    assert isinstance(store, RunEventLog) and isinstance(store, RunInbox)
    assert store.append_events("r1", [{"kind": "step", "text": "clarify"}, {"kind": "turn", "payload": {"n": 1}}]) == 2
    assert store.append_events("r2", [{"kind": "step", "text": "once"}]) == 1
    assert store.append_events("r1", [{"kind": "text", "text": "hi"}], head={"state": "running"}) == 3
    events = store.read_events("r1")
    assert [(e.seq, e.event["kind"]) for e in events] == [(1, "step"), (2, "turn"), (3, "text")]
    assert [e.seq for e in store.read_events("r1", after=2)] == [3]
    assert [e.seq for e in store.read_events("r1", limit=1)] == [1]
    assert store.read_events("nobody") == []
    other = make(like=store)  # another process or machine on the same data
    assert [e.event["text"] for e in other.read_events("r2")] == ["once"]


def test_heads_list_runs_newest_first_and_keep_the_last_head(make: Callable[..., Any]) -> None:
    store = make()
    store.append_events("old", [{"kind": "step"}], head={"state": "running", "step": "a"})
    store.append_events("new", [{"kind": "step"}], head={"state": "running"})
    store.append_events("old", [{"kind": "turn"}])  # no head: the last one stays
    heads = store.run_heads()
    assert [h.run_id for h in heads] == ["new", "old"]
    old = store.run_head("old")
    assert old is not None and old.last_seq == 2 and old.head == {"state": "running", "step": "a"}
    assert old.updated_ms >= old.created_ms
    assert store.run_head("missing") is None


def test_a_large_tool_output_is_not_copied_and_long_strings_are_cut() -> None:
    huge = "x" * 200_000
    stored = json.loads(bound_event({"kind": "tool_result", "text": huge, "payload": {"id": "t1"}}))
    assert len(stored["text"]) < MAX_TOOL_OUTPUT_CHARS + 50 and "199700 more characters" in stored["text"]
    wide = {"kind": "turn", "payload": {f"k{i}": "y" * 3000 for i in range(100)}}
    text = bound_event(wide)
    assert len(text) <= MAX_EVENT_CHARS
    assert json.loads(text)["kind"] == "turn"
    odd = json.loads(
        bound_event({"kind": "notice", "text": "\ud83d cut", "payload": {"at": float("nan"), "o": object()}})
    )
    assert odd["payload"]["at"] is None and odd["payload"]["o"].startswith("<object")


def test_messages_are_taken_once(make: Callable[..., Any]) -> None:
    store = make()
    a = store.post_message("r1", "answer", "SQLite", sender="alice@host", question="q1")
    store.post_message("r1", "mail", "also add tests")
    store.post_message("r2", "stop", "", sender="bob")
    taken = store.take_messages("r1")
    assert [(m.kind, m.text, m.sender, m.question) for m in taken] == [
        ("answer", "SQLite", "alice@host", "q1"),
        ("mail", "also add tests", "", ""),
    ]
    assert taken[0].id == a.id and a.at_ms > 0
    assert store.take_messages("r1") == []
    assert [m.kind for m in make(like=store).take_messages("r2")] == ["stop"]


def test_two_takers_never_get_the_same_message(make: Callable[..., Any]) -> None:
    store = make()
    for n in range(40):
        store.post_message("r", "mail", f"m{n}")
    other = make(like=store)
    got: list[list[Any]] = [[], []]

    def take(i: int, s: Any) -> None:
        for _ in range(20):
            got[i] += s.take_messages("r")

    threads = [threading.Thread(target=take, args=(i, s)) for i, s in enumerate((store, other))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    texts = sorted(m.text for m in got[0] + got[1])
    assert texts == sorted(f"m{n}" for n in range(40))


def test_bad_messages_are_refused_with_what_to_do(make: Callable[..., Any]) -> None:
    store = make()
    with pytest.raises(ValueError, match="one of answer, mail, stop"):
        store.post_message("r", "shout", "hey")
    with pytest.raises(ValueError, match="empty mail says nothing"):
        store.post_message("r", "mail", "  ")
    with pytest.raises(ValueError, match="non-empty string"):
        store.read_events("")


def test_liveness_comes_from_the_run_s_session_lease(make: Callable[..., Any]) -> None:
    store = make()

    async def lease() -> Any:
        return await store.acquire_lease(
            "-ws", "5f0c8f0e-1111-4000-8000-000000000001", LeaseOwner("h", 1, "run-a"), ttl=60
        )

    held = anyio.run(lease)
    assert store.live_runs() == {"run-a"}
    anyio.run(store.release_lease, held)
    assert store.live_runs() == set()


def test_follow_yields_events_as_another_process_stores_them(make: Callable[..., Any]) -> None:
    store = make()
    writer = make(like=store)
    store.append_events("r", [{"kind": "step"}])

    async def main() -> list[int]:
        seen: list[int] = []
        async with anyio.create_task_group() as tg:

            async def write() -> None:
                for n in range(3):
                    await anyio.sleep(0.05)
                    await anyio.to_thread.run_sync(writer.append_events, "r", [{"kind": "turn", "n": n}])
                await anyio.to_thread.run_sync(lambda: writer.append_events("r", [{"kind": "done"}]))

            tg.start_soon(write)
            with anyio.fail_after(30):
                async for event in follow_events(store, "r", poll_s=0.02, until=lambda e: e.event["kind"] == "done"):
                    seen.append(event.seq)
        return seen

    assert anyio.run(main) == [1, 2, 3, 4, 5]


def test_layers_pass_the_log_and_inbox_through(tmp_path: Path) -> None:
    layered = PruningSessionStore(tmp_path / "s.db", tmp_path)
    layered.append_events("r", [{"kind": "step"}], head={"state": "running"})
    layered.post_message("r", "mail", "hello")
    with SqliteSessionStore(tmp_path / "s.db") as raw:
        assert [h.run_id for h in raw.run_heads()] == ["r"]
        assert [m.text for m in raw.take_messages("r")] == ["hello"]
    layered.close()


def test_a_read_only_store_from_before_the_log_has_no_events(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "old.db"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE entries (store_key TEXT, seq INTEGER, uid TEXT, payload TEXT)")
    db.execute("CREATE TABLE meta (store_key TEXT PRIMARY KEY, mtime INTEGER, next_seq INTEGER)")
    db.close()
    with SqliteSessionStore(path, read_only=True) as old:
        assert old.run_heads() == [] and old.read_events("r") == [] and old.live_runs() == set()
        assert old.take_messages("r") == []
        with pytest.raises(StoreError, match="read-only"):
            old.post_message("r", "mail", "hi")
