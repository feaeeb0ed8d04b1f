"""`import_transcript` / `import_entries`: a store's gaps filled from a local JSONL, by uuid, idempotent."""

from __future__ import annotations

import json
from pathlib import Path

from claude_agent_sdk import InMemorySessionStore

from flower_stores import PruningSessionStore, SqliteSessionStore, import_entries, import_transcript


def _entry(n: int) -> dict[str, object]:
    return {"type": "user", "uuid": f"u-{n}", "message": {"role": "user", "content": f"message {n}"}}


def _write(path: Path, entries: list[dict[str, object]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(e) + "\n" for e in entries))
    return path


async def test_only_the_missing_entries_are_added_and_a_second_import_adds_nothing(tmp_path: Path) -> None:
    store = InMemorySessionStore()
    key = {"project_key": "p", "session_id": "s"}
    await store.append(key, [_entry(0), _entry(1)])  # the mirror took the first two, then failed
    local = _write(tmp_path / "p" / "s.jsonl", [_entry(i) for i in range(5)] + [{"type": "summary", "x": 1}])
    _write(tmp_path / "p" / "s" / "subagents" / "agent-a.jsonl", [_entry(10)])

    report = await import_transcript(store, "p", "s", local)
    assert (report.read, report.added) == (7, 5)
    assert [e.get("uuid") for e in await store.load(key) or []] == ["u-0", "u-1", "u-2", "u-3", "u-4", None]
    worker = await store.load({"project_key": "p", "session_id": "s", "subpath": "subagents/agent-a"})
    assert [e["uuid"] for e in worker or []] == ["u-10"]

    again = await import_transcript(store, "p", "s", local)
    assert again.added == 0 and len(await store.load(key) or []) == 6


async def test_a_layered_sqlite_store_is_filled_in_its_stored_copy(tmp_path: Path) -> None:
    backend = SqliteSessionStore(tmp_path / "sessions.db")
    store = PruningSessionStore(backend, tmp_path)
    key = {"project_key": "p", "session_id": "s"}
    try:
        assert await import_entries(store, key, [_entry(1), _entry(2), _entry(1)]) == 2
        assert await import_entries(store, key, [_entry(2), _entry(3)]) == 1
        assert [e["uuid"] for e in await backend.load(key) or []] == ["u-1", "u-2", "u-3"]
    finally:
        store.close()


async def test_a_line_cut_short_is_skipped_and_counted(tmp_path: Path) -> None:
    store = InMemorySessionStore()
    local = tmp_path / "s.jsonl"
    local.write_text(json.dumps(_entry(1)) + "\n" + '{"type": "user", "uu')
    report = await import_transcript(store, "p", "s", local)
    assert (report.added, report.skipped_lines) == (1, 1)


async def test_through_a_fenced_layer_the_stored_copy_is_compared_and_a_superseded_lease_adds_nothing(
    tmp_path: Path,
) -> None:
    import pytest

    from flower_stores import LeaseLost, LeaseOwner

    backend = SqliteSessionStore(tmp_path / "sessions.db")
    store = PruningSessionStore(backend, tmp_path)
    key = {"project_key": "p", "session_id": "s"}
    try:
        first = await store.acquire_lease("p", "s", LeaseOwner("h", 1, "run-1"), ttl=60)
        view = store.fenced(first)
        assert await import_entries(view, key, [_entry(1), _entry(2)]) == 2
        assert await import_entries(view, key, [_entry(1), _entry(2), _entry(3)]) == 1
        # The lease ends (released here; expired alike) and another driver takes the session at a later epoch:
        # the first one's import is refused whole.
        await store.release_lease(first)
        await store.acquire_lease("p", "s", LeaseOwner("h", 2, "run-2"), ttl=60)
        with pytest.raises(LeaseLost):
            await import_entries(view, key, [_entry(4)])
        assert [e["uuid"] for e in await backend.load(key) or []] == ["u-1", "u-2", "u-3"]
    finally:
        store.close()
