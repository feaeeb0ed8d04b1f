"""SqliteSessionStore beyond the conformance suite: the schema (the original flower's, docs/compatibility.md),
idempotency, the summary, the helpers."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import InMemorySessionStore, fold_session_summary

from flower_stores import SqliteSessionStore, StoreError

KEY: Any = {"project_key": "-ws", "session_id": "s1"}
SUB: Any = {**KEY, "subpath": "subagents/agent-a1"}


def _e(uid: str | None, **extra: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": "user", **extra}
    if uid is not None:
        entry["uuid"] = uid
    return entry


def _rows(db: Path, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql, args).fetchall()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "runs" / "sessions.db"


async def test_schema_is_the_seeds(db: Path) -> None:
    """The tables and index of the original flower's sessions.db, so its files open here (docs/compatibility.md)."""
    with SqliteSessionStore(db):
        pass
    tables = dict(_rows(db, "SELECT name, sql FROM sqlite_master WHERE type IN ('table', 'index') AND sql IS NOT NULL"))
    # The seed's three tables and index, the session lease's table (one driver per session), the run records' and
    # the run log's (what a run publishes, its summary, its inbox).
    assert set(tables) == {
        *("entries", "meta", "summaries", "entries_uid", "leases", "runs", "run_rows", "run_lineage"),
        *("run_events", "run_heads", "run_inbox", "run_inbox_waiting", "sqlite_sequence"),
    }
    names = ("entries", "meta", "summaries", "leases", "runs", "run_rows", "run_lineage")
    columns = {t: [c[1] for c in _rows(db, f"PRAGMA table_info({t})")] for t in names}
    assert columns == {
        "entries": ["store_key", "seq", "uid", "payload"],
        "meta": ["store_key", "mtime", "next_seq"],
        "summaries": ["project_key", "session_id", "mtime", "data"],
        "leases": [
            "project_key",
            "session_id",
            "epoch",
            "host",
            "pid",
            "run_id",
            "acquired_at",
            "renewed_at",
            "expires_at",
            "released",
        ],
        "runs": ["run_id", "created_at", "updated_at"],
        "run_rows": ["run_id", "step", "started_at", "row_json"],
        "run_lineage": ["run_id", "step", "session_id"],
    }
    assert "UNIQUE INDEX" in tables["entries_uid"] and "WHERE uid IS NOT NULL" in tables["entries_uid"]
    assert _rows(db, "PRAGMA journal_mode") == [("wal",)]


async def test_store_key_layout_and_contiguous_seq(db: Path) -> None:
    with SqliteSessionStore(db) as store:
        await store.append(KEY, [_e("a"), _e("b")])
        await store.append(KEY, [_e("c")])
        await store.append(SUB, [_e("x")])
    assert _rows(db, "SELECT store_key, seq, uid FROM entries ORDER BY store_key, seq") == [
        ("-ws/s1", 0, "a"),
        ("-ws/s1", 1, "b"),
        ("-ws/s1", 2, "c"),
        ("-ws/s1/subagents/agent-a1", 0, "x"),
    ]
    assert _rows(db, "SELECT store_key, next_seq FROM meta ORDER BY store_key") == [
        ("-ws/s1", 3),
        ("-ws/s1/subagents/agent-a1", 1),
    ]


async def test_a_replayed_batch_adds_nothing_and_changes_no_mtime(db: Path) -> None:
    with SqliteSessionStore(db) as store:
        batch = [_e("a", n=1), _e("b", n=2)]
        await store.append(KEY, batch)
        before = _rows(db, "SELECT mtime, next_seq FROM meta")
        summary_before = await store.list_session_summaries("-ws")
        await store.append(KEY, batch)  # the SDK retries a failed batch as a whole
        await store.append(KEY, [batch[1]])
        assert _rows(db, "SELECT mtime, next_seq FROM meta") == before
        assert await store.list_session_summaries("-ws") == summary_before
        assert await store.load(KEY) == batch


async def test_partial_replay_keeps_only_new_entries_and_uuidless_entries_are_never_deduped(db: Path) -> None:
    with SqliteSessionStore(db) as store:
        await store.append(KEY, [_e("a"), _e(None, kind="tag")])
        await store.append(KEY, [_e("a"), _e("b"), _e("b"), _e(None, kind="tag")])
        loaded = await store.load(KEY)
    assert [e.get("uuid") for e in loaded or []] == ["a", None, "b", None]
    assert [s for (s,) in _rows(db, "SELECT seq FROM entries ORDER BY seq")] == [0, 1, 2, 3]


async def test_same_uuid_under_two_keys_is_two_entries(db: Path) -> None:
    with SqliteSessionStore(db) as store:
        await store.append(KEY, [_e("a")])
        await store.append(SUB, [_e("a")])
        assert await store.load(KEY) == [_e("a")]
        assert await store.load(SUB) == [_e("a")]


async def test_summary_is_the_sdk_fold_of_every_batch_with_storage_clock_mtime(db: Path) -> None:
    batches = [
        [_e("a", timestamp="2026-01-01T00:00:00.000Z", cwd="/ws", message={"role": "user", "content": "first prompt"})],
        [_e("b", timestamp="2026-01-01T00:00:01.000Z", customTitle="title one", gitBranch="main")],
        [_e(None, type="tag", tag="keep"), _e("c", timestamp="2026-01-01T00:00:02.000Z", customTitle="title two")],
    ]
    reference = InMemorySessionStore()
    with SqliteSessionStore(db) as store:
        for batch in batches:
            await store.append(KEY, batch)
            await reference.append(KEY, batch)
        await store.append(SUB, [_e("s", customTitle="subagent")])  # subagents never touch the summary
        [summary] = await store.list_session_summaries("-ws")
        [expected] = await reference.list_session_summaries("-ws")
        assert summary["data"] == expected["data"]
        prev = None
        for batch in batches:
            prev = fold_session_summary(prev, KEY, batch)
        assert summary["data"] == prev["data"]  # type: ignore[index]
        [listed] = await store.list_sessions("-ws")
        assert summary["mtime"] == listed["mtime"] > 1e12
        assert await store.list_session_summaries("elsewhere") == []


async def test_mtime_strictly_increases_per_key_even_across_instances(db: Path) -> None:
    first, second = SqliteSessionStore(db), SqliteSessionStore(db)
    stamps = []
    for i in range(30):
        await (first if i % 2 else second).append(KEY, [_e(f"u{i}")])
        stamps.append(_rows(db, "SELECT mtime FROM meta WHERE store_key = '-ws/s1'")[0][0])
    assert all(b > a for a, b in zip(stamps, stamps[1:], strict=False))
    first.close()
    second.close()


async def test_list_delete_and_subkeys_respect_key_boundaries(db: Path) -> None:
    with SqliteSessionStore(db) as store:
        # "-ws" must not match "-ws_x" or "-wsx": no LIKE wildcards, no prefix confusion.
        for pk in ("-ws", "-ws_x", "-wsx"):
            await store.append({"project_key": pk, "session_id": "s1"}, [_e("a")])
            await store.append({"project_key": pk, "session_id": "s1", "subpath": "subagents/agent-1"}, [_e("a")])
        await store.append({"project_key": "-ws", "session_id": "s10"}, [_e("a")])
        assert sorted(s["session_id"] for s in await store.list_sessions("-ws")) == ["s1", "s10"]
        assert await store.list_subkeys(KEY) == ["subagents/agent-1"]
        # the synchronous twins (for readers without an event loop) answer the same
        assert store.list_sessions_sync("-ws") == await store.list_sessions("-ws")
        assert store.list_subkeys_sync(KEY) == ["subagents/agent-1"]
        await store.delete(KEY)
        assert await store.load(KEY) is None
        assert await store.list_subkeys(KEY) == []
        assert await store.load({"project_key": "-ws", "session_id": "s10"}) == [_e("a")]
        assert await store.load({"project_key": "-ws_x", "session_id": "s1", "subpath": "subagents/agent-1"}) == [
            _e("a")
        ]
        assert store.projects() == ["-ws", "-ws_x", "-wsx"]


async def test_has_session_reads_meta_only(db: Path) -> None:
    with SqliteSessionStore(db) as store:
        await store.append(KEY, [_e("a")])
        await store.append(SUB, [_e("x")])
        assert store.has_session("-ws", "s1")
        assert not store.has_session("-ws", "s2")
        with sqlite3.connect(db) as conn:
            conn.execute("UPDATE entries SET payload = 'not json'")  # payloads are never read
        assert store.has_session("-ws", "s1")


async def test_last_context_sums_the_latest_real_usage(db: Path) -> None:
    def assistant(uid: str, **usage: int) -> dict[str, Any]:
        return {"type": "assistant", "uuid": uid, "message": {"role": "assistant", "usage": usage}}

    with SqliteSessionStore(db) as store:
        assert store.last_context("-ws", "s1") == 0
        await store.append(
            KEY,
            [
                assistant(
                    "a", input_tokens=10, cache_read_input_tokens=1000, cache_creation_input_tokens=5, output_tokens=7
                ),
                _e("b"),
                assistant("c", input_tokens=20, cache_read_input_tokens=2000, cache_creation_input_tokens=0),
                assistant("err", input_tokens=0, output_tokens=0),  # a synthetic error: zero usage
                _e("d"),
            ],
        )
        assert store.last_context("-ws", "s1") == 2020
        assert store.last_context("-ws", "s1", scan=2) == 0  # only the zero-usage error and a user entry
        with sqlite3.connect(db) as conn:
            conn.execute("UPDATE entries SET payload = '{broken' WHERE uid = 'd'")
        assert store.last_context("-ws", "s1") == 2020  # a bad row is skipped


async def test_has_entry_looks_up_one_uuid_of_the_main_transcript(db: Path) -> None:
    with SqliteSessionStore(db) as store:
        assert not store.has_entry("-ws", "s1", "a")
        await store.append(KEY, [_e("a"), _e("cut \ud83d")])  # a uuid with a lone surrogate is stored as bytes
        await store.append(SUB, [_e("w")])
        assert store.has_entry("-ws", "s1", "a") and store.has_entry("-ws", "s1", "cut \ud83d")
        assert not store.has_entry("-ws", "s1", "w"), "a worker's entry is not in the main transcript"
        assert not store.has_entry("-ws", "s2", "a") and not store.has_entry("-ws", "s1", "cut ")


async def test_close_is_idempotent_and_a_closed_store_says_so(db: Path) -> None:
    store = SqliteSessionStore(db)
    await store.append(KEY, [_e("a")])
    store.close()
    store.close()
    with pytest.raises(StoreError, match="closed"):
        await store.load(KEY)


def test_a_bad_path_is_a_one_line_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(StoreError, match="writable directory") as caught:
        SqliteSessionStore(blocker / "sessions.db")
    assert "\n" not in str(caught.value)
    not_a_db = tmp_path / "notes.db"
    not_a_db.write_text("plain text, not SQLite" * 100)
    with pytest.raises(StoreError, match="SQLite file"):
        SqliteSessionStore(not_a_db)


async def test_entries_round_trip_deep_equal(db: Path) -> None:
    entry = {
        "type": "assistant",
        "uuid": "u",
        "message": {"content": [{"type": "text", "text": "héllo — 你好 \u2028 \x00"}], "n": 1.5, "t": True, "z": None},
    }
    with SqliteSessionStore(db) as store:
        await store.append(KEY, [entry])
        assert await store.load(KEY) == [entry]
    payload = _rows(db, "SELECT payload FROM entries")[0][0]
    assert json.loads(payload) == entry


# --- no batch is lost for its content ---------------------------------------------------------------------------

# A real 2.0.5 Bash result from the corpus, its output cut inside an emoji: valid JSON, a valid Python str, but a
# lone surrogate that UTF-8 (and so SQLite's TEXT binding) cannot hold.
CUT = json.loads(
    '{"parentUuid": "b71cdedf-849f-4f38-badc-75403cd3ee6a", "isSidechain": false, "userType": "external", "version": "2.0.5",'
    ' "type": "user", "message": {"role": "user", "content": [{"tool_use_id": "toolu_01T1SrbUgaSJkHWJd5outNgr",'
    ' "type": "tool_result", "content": "build ok \\ud83d", "is_error": false}]},'
    ' "uuid": "3367bd17-88e3-47f0-a32b-98b72d7ddebf", "timestamp": "2025-10-03T23:59:15.607Z",'
    ' "toolUseResult": {"stdout": "build ok \\ud83d", "stderr": "", "interrupted": false, "isImage": false}}'
)


async def test_a_lone_surrogate_never_costs_the_batch_and_loads_back_exactly(db: Path) -> None:
    batch = [
        _e("a"),
        CUT,
        _e("\ud800odd-uuid", message={"role": "user", "content": "\udfff prompt"}),
        _e("z", message={"role": "user", "content": "caf\u00e9 \U0001f600"}),
    ]
    memory = InMemorySessionStore()
    await memory.append(KEY, batch)  # the SDK's own store takes it: so must ours
    with SqliteSessionStore(db) as store:
        await store.append(KEY, batch)
        assert await store.load(KEY) == batch == await memory.load(KEY)
        await store.append(KEY, batch)  # a replay, odd uuid included, adds nothing
        assert await store.load(KEY) == batch
        assert (await store.list_session_summaries("-ws"))[0]["data"] == (await memory.list_session_summaries("-ws"))[
            0
        ]["data"]
    # Plain UTF-8 stays readable in the file; only the entry that needs it is escaped.
    payloads = [p for (p,) in _rows(db, "SELECT payload FROM entries ORDER BY seq")]
    assert "\\ud83d" in payloads[1] and "caf\u00e9 \U0001f600" in payloads[3]


async def test_lines_that_are_not_objects_are_stored_as_they_are(db: Path) -> None:
    batch = [_e("a"), "a stray string", 42, None, [1, "two"], _e("b")]
    with SqliteSessionStore(db) as store:
        await store.append(KEY, batch)
        assert await store.load(KEY) == batch
        assert store.last_context("-ws", "s1") == 0
