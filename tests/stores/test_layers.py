"""TrimmingSessionStore / PruningSessionStore as wrappers: construction, pass-through, rewriting, lifetime."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import InMemorySessionStore
from stores._transcripts import Transcript, tool_results, tool_uses

from flower_stores import (
    EphemeralPolicy,
    LoadReport,
    PrunePolicy,
    PruningSessionStore,
    SqliteSessionStore,
    TrimmingSessionStore,
    TrimPolicy,
    rewrite,
    trim_report,
)

KEY: Any = {"project_key": "-ws", "session_id": "s1"}
BIG = "output line\n" * 400


def _session() -> Transcript:
    t = Transcript()
    t.user("go")
    t.bash("cat big.log", BIG)
    t.bash("git status", "clean")
    t.bash("git status", "clean again")
    t.denied("rm a")
    t.denied("rm b")
    t.api_error()
    t.call("Bash", {"command": "long job"})  # killed mid-call
    return t


async def test_a_path_builds_and_owns_a_sqlite_backend(tmp_path: Path) -> None:
    store = PruningSessionStore(tmp_path / "runs" / "sessions.db", tmp_path, policy=TrimPolicy(keep_recent=0))
    assert isinstance(store.backend, SqliteSessionStore) and isinstance(store, TrimmingSessionStore)
    t = _session()
    await store.append(KEY, t.entries)
    assert store.has_session("-ws", "s1") and store.projects() == ["-ws"]
    assert store.last_context("-ws", "s1") == 100
    assert store.has_entry("-ws", "s1", t.entries[0]["uuid"]) and not store.has_entry("-ws", "s1", "nope")
    assert await store.list_subkeys(KEY) == []
    store.close()
    with pytest.raises(Exception, match="closed"):
        await store.backend.load(KEY)


async def test_a_store_passed_in_stays_open_and_unchanged(tmp_path: Path) -> None:
    backend = SqliteSessionStore(tmp_path / "sessions.db")
    t = _session()
    with PruningSessionStore(backend, tmp_path, policy=TrimPolicy(keep_recent=0)) as store:
        await store.append(KEY, t.entries)
        layered = await store.load(KEY)
    assert await backend.load(KEY) == t.entries  # the stored copy is the full, raw transcript
    assert layered != t.entries
    backend.close()


@pytest.mark.parametrize("backend_type", [SqliteSessionStore, type("SqliteSubclass", (SqliteSessionStore,), {})])
async def test_over_sqlite_the_load_equals_the_pure_rewrite_and_the_stored_copy_stays(
    tmp_path: Path, backend_type: type
) -> None:
    """Over our own SQLite store the rewrite edits the fresh parse in place (see rewrite/_fused.py); it must not show."""
    backend = backend_type(tmp_path / "sessions.db")
    t = _session()
    policies: dict[str, Any] = {
        "policy": TrimPolicy(keep_recent=0),
        "ephemeral": EphemeralPolicy(keep_recent=1),
        "prune": PrunePolicy(),
    }
    store = PruningSessionStore(backend, tmp_path, **policies)
    await store.append(KEY, t.entries)
    first, second = await store.load(KEY), await store.load(KEY)
    expected = rewrite(
        t.entries,
        tmp_path,
        ephemeral=policies["ephemeral"],
        trim_policy=policies["policy"],
        prune_policy=policies["prune"],
    )
    assert first == second == expected.entries and store.last_report == expected.report
    assert await backend.load(KEY) == t.entries
    backend.close()


async def test_pruning_store_runs_every_layer_in_order(tmp_path: Path) -> None:
    t = _session()
    inner = InMemorySessionStore()
    await inner.append(KEY, t.entries)
    store = PruningSessionStore(
        inner,
        tmp_path,
        policy=TrimPolicy(keep_recent=0),
        ephemeral=EphemeralPolicy(keep_recent=1),
        prune=PrunePolicy(keep_denials=1),
    )
    out = await store.load(KEY)
    assert out is not None
    results = tool_results(out)
    contents = [b["content"] for b in results.values()]
    assert any(c.startswith("[Earlier tool result trimmed") for c in contents)
    assert sum(c.startswith("[`git status` result expired") for c in contents) == 1
    assert len([u for u in tool_uses(out).values() if u["input"]["command"].startswith("rm")]) == 1
    assert not any(e.get("isApiErrorMessage") for e in out)
    assert set(results) == set(tool_uses(out))
    report = store.last_report
    assert report == LoadReport(
        expired=1,
        trimmed=1,
        kept=0,
        chars_saved=report.chars_saved,
        denials_dropped=1,
        api_errors_dropped=1,
        orphans_healed=1,
        pruned=3,
    )
    assert store.pruned == 3 and store.denials_dropped == 1
    assert trim_report(store).startswith("trimmed 1 tool result (kept 0), saved ~")
    assert await inner.load(KEY) == t.entries  # never modified


async def test_defaults_follow_the_seed(tmp_path: Path) -> None:
    """The default policies are the original flower's (docs/compatibility.md); no TrimPolicy means no trimming."""
    t = _session()
    inner = InMemorySessionStore()
    await inner.append(KEY, t.entries)
    trimming = TrimmingSessionStore(inner, tmp_path)
    assert trimming.policy == TrimPolicy() and trimming.ephemeral == EphemeralPolicy() and trimming.prune_policy is None
    out = await trimming.load(KEY)
    assert out is not None and any(e.get("isApiErrorMessage") for e in out)  # trimming does not prune
    pruning = PruningSessionStore(inner, tmp_path)
    assert pruning.policy is None and pruning.prune_policy == PrunePolicy() and pruning.ephemeral == EphemeralPolicy()
    out = await pruning.load(KEY)
    assert out is not None and BIG in [b["content"] for b in tool_results(out).values()]  # no TrimPolicy: no trimming
    off = PruningSessionStore(
        inner, tmp_path, policy=TrimPolicy(enabled=False, keep_recent=0), ephemeral=EphemeralPolicy(enabled=False)
    )
    out = await off.load(KEY)
    assert out is not None and "clean" in [b["content"] for b in tool_results(out).values()]


async def test_last_report_is_reset_when_a_load_finds_nothing(tmp_path: Path) -> None:
    inner = InMemorySessionStore()
    await inner.append(KEY, _session().entries)
    store = PruningSessionStore(inner, tmp_path)
    await store.load(KEY)
    assert store.last_report
    assert await store.load({"project_key": "-ws", "session_id": "missing"}) is None
    assert store.last_report == LoadReport()  # not the previous load's report


async def test_subagent_transcripts_are_rewritten_too(tmp_path: Path) -> None:
    sub = {**KEY, "subpath": "subagents/agent-a1"}
    inner = InMemorySessionStore()
    await inner.append(sub, _session().entries)
    out = await PruningSessionStore(inner, tmp_path).load(sub)
    assert out is not None and not any(e.get("isApiErrorMessage") for e in out)


async def test_the_rewrite_runs_off_the_event_loop(tmp_path: Path) -> None:
    seen: list[str] = []

    inner = InMemorySessionStore()
    await inner.append(KEY, _session().entries)
    store = PruningSessionStore(inner, tmp_path)
    import flower_stores.layers._layered_stores as layers

    original = layers.rewrite_once

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(threading.current_thread().name)
        return original(*args, **kwargs)

    layers.rewrite_once = spy  # type: ignore[assignment]
    try:
        await store.load(KEY)
    finally:
        layers.rewrite_once = original  # type: ignore[assignment]
    assert seen and seen[0] != threading.main_thread().name


def test_bad_arguments_get_one_line_errors(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="needs a path to a sessions.db or a session store"):
        PruningSessionStore(42, tmp_path)
    with pytest.raises(TypeError, match="workspace must be a path"):
        TrimmingSessionStore(InMemorySessionStore(), None)  # type: ignore[arg-type]


def test_repr_names_the_backend(tmp_path: Path) -> None:
    store = TrimmingSessionStore(tmp_path / "s.db", tmp_path)
    assert repr(store).startswith("TrimmingSessionStore(SqliteSessionStore(")
    store.close()
