"""`StoreUpkeep` on real SQLite files and a real PostgreSQL server: what a plan deletes and keeps (live leases,
runs' lineage), what apply does, prune by age, and compaction giving the space back."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest

from flower_stores import LeaseOwner, SqliteSessionStore, StoreUpkeep, TrimmingSessionStore

PROJECT = "-ws"
OTHER_PROJECT = "-elsewhere"
DAY = 86400.0


def _sid(n: int) -> str:
    return f"5f0c8f0e-0000-4000-8000-{n:012d}"


def _entries(sid: str, count: int = 20, size: int = 4000) -> list[dict[str, Any]]:
    """A transcript of ``count`` user lines of ``size`` characters (text that compresses poorly on purpose:
    PostgreSQL's TOAST would otherwise hide the sizes)."""
    return [
        {
            "type": "user",
            "uuid": f"{sid}-{i}",
            "sessionId": sid,
            "message": {
                "role": "user",
                "content": "".join(f"{(i * 7919 + j * 104729) % 1000003:07d}" for j in range(size // 7)),
            },
        }
        for i in range(count)
    ]


async def _session(store: Any, n: int, *, project: str = PROJECT, worker: bool = True) -> str:
    sid = _sid(n)
    key = {"project_key": project, "session_id": sid}
    await store.append(key, _entries(sid))
    if worker:
        await store.append({**key, "subpath": "subagents/agent-w1"}, _entries(sid + "-w", count=5))
    return sid


@pytest.fixture(params=["sqlite", "postgres"])
def make(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[..., Any]]:
    """``make()``: a fresh writable store of the parametrised backend; ``make(like=s, read_only=True)`` a reader."""
    opened: list[SqliteSessionStore] = []
    if request.param == "postgres":
        pg_store = request.getfixturevalue("pg_store")
        yield lambda like=None, **options: pg_store(schema=like.schema if like is not None else None, **options)
        return

    def sqlite(like: Any = None, **options: Any) -> SqliteSessionStore:
        store = SqliteSessionStore(like.path if like is not None else tmp_path / "sessions.db", **options)
        opened.append(store)
        return store

    yield sqlite
    for store in opened:
        store.close()


async def _ids(store: Any, project: str = PROJECT) -> set[str]:
    return {s["session_id"] for s in await store.list_sessions(project)}


async def test_delete_removes_exactly_the_named_sessions_with_their_workers(make: Callable[..., Any]) -> None:
    store = make()
    one, two, three = [await _session(store, n) for n in (1, 2, 3)]
    upkeep = StoreUpkeep(store)
    plan = await upkeep.plan_delete([two], project_key=PROJECT)
    assert [s.session_id for s in plan.delete] == [two] and not plan.kept and not plan.forced
    assert plan.payload_bytes > 25 * 4000  # the session's 20 lines and its worker's 5
    assert await _ids(store) == {one, two, three}  # a plan changes nothing
    result = await upkeep.apply(plan)
    assert [s.session_id for s in result.deleted] == [two]
    assert await _ids(store) == {one, three}
    key = {"project_key": PROJECT, "session_id": two}
    assert await store.load(key) is None and await store.list_subkeys(key) == []
    assert two not in {s["session_id"] for s in await store.list_session_summaries(PROJECT)}
    kept_key = {"project_key": PROJECT, "session_id": one}
    assert len(await store.load(kept_key) or []) == 20 and await store.list_subkeys(kept_key) == ["subagents/agent-w1"]
    with pytest.raises(ValueError, match=f"no session {_sid(9)}"):
        await upkeep.plan_delete([one, _sid(9)])
    assert await _ids(store) == {one, three}  # an unknown id stops the whole plan


async def test_a_live_lease_keeps_its_session_even_with_force(make: Callable[..., Any]) -> None:
    store = make()
    driven, idle = await _session(store, 1), await _session(store, 2)
    lease = await store.acquire_lease(PROJECT, driven, LeaseOwner("box-a", 101, "run-A"), ttl=600)
    upkeep = StoreUpkeep(store)
    assert await upkeep.live_sessions() == [(PROJECT, driven)]
    plan = await upkeep.plan_delete([driven, idle], force=True)
    assert [s.session_id for s in plan.delete] == [idle]
    assert [(k.session.session_id, k.forceable) for k in plan.kept] == [(driven, False)]
    assert "box-a/pid 101 (run run-A)" in plan.kept[0].reason
    await upkeep.apply(plan)
    assert await _ids(store) == {driven}
    # Released: the session may go now.
    await store.release_lease(lease)
    assert await upkeep.live_sessions() == []
    result = await upkeep.apply(await upkeep.plan_delete([driven]))
    assert [s.session_id for s in result.deleted] == [driven] and await _ids(store) == set()


async def test_a_lease_taken_after_the_plan_still_protects_its_session(make: Callable[..., Any]) -> None:
    store = make()
    sid = await _session(store, 1)
    upkeep = StoreUpkeep(store)
    plan = await upkeep.plan_delete([sid])
    assert [s.session_id for s in plan.delete] == [sid]
    await store.acquire_lease(PROJECT, sid, LeaseOwner("box-b", 202, "run-B"), ttl=600)
    result = await upkeep.apply(plan)
    assert not result.deleted and [k.session.session_id for k in result.kept] == [sid]
    assert await _ids(store) == {sid}


async def test_a_runs_lineage_is_kept_unless_forced(make: Callable[..., Any]) -> None:
    store = make()
    head, old, local = [await _session(store, n) for n in (1, 2, 3)]
    await store.put_lineage("run-1", "build", head)  # the store's own run records (a fleet run)
    upkeep = StoreUpkeep(store, needed={local: "step 'once' of run dir /r continues it"})
    plan = await upkeep.plan_delete([head, old, local])
    assert [s.session_id for s in plan.delete] == [old]
    reasons = {k.session.session_id: (k.reason, k.forceable) for k in plan.kept}
    assert reasons == {
        head: ("step 'build' of run run-1 continues it (a wake would resume it)", True),
        local: ("step 'once' of run dir /r continues it", True),
    }
    await upkeep.apply(plan)
    assert await _ids(store) == {head, local}
    forced = await upkeep.plan_delete([head, local], force=True)
    assert {s.session_id for s in forced.delete} == {head, local} and not forced.kept
    assert {k.session.session_id for k in forced.forced} == {head, local}
    await upkeep.apply(forced)
    assert await _ids(store) == set()


async def test_prune_deletes_by_age_in_one_project(make: Callable[..., Any]) -> None:
    store = make()
    old = [await _session(store, n, worker=False) for n in (1, 2)]
    elsewhere = await _session(store, 3, project=OTHER_PROJECT, worker=False)
    await anyio.sleep(0.01)  # the storage clock is in ms: the next sessions are written at a later ms
    new = [await _session(store, n, worker=False) for n in (4, 5)]
    times = {s.session_id: s.mtime_ms for s in (await StoreUpkeep(store).plan_delete(old + new)).delete}
    assert max(times[s] for s in old) < min(times[s] for s in new)
    cutoff_s = (max(times[s] for s in old) + 1) / 1000
    # "Now" is 30 days after the cutoff: everything written before it is older than 30 days.
    upkeep = StoreUpkeep(store, clock=lambda: cutoff_s + 30 * DAY)
    plan = await upkeep.plan_prune(timedelta(days=30), project_key=PROJECT)
    assert {s.session_id for s in plan.delete} == set(old)
    await upkeep.apply(plan)
    assert await _ids(store) == set(new) and await _ids(store, OTHER_PROJECT) == {elsewhere}
    assert not (await upkeep.plan_prune(30 * DAY, project_key=PROJECT)).delete
    assert {s.session_id for s in (await upkeep.plan_prune(0)).delete} == {*new, elsewhere}
    with pytest.raises(ValueError, match="zero or more"):
        await upkeep.plan_prune(-1)


async def test_compaction_gives_the_space_of_deleted_sessions_back(make: Callable[..., Any]) -> None:
    store = make()
    sids = [await _session(store, n) for n in range(1, 9)]
    upkeep = StoreUpkeep(store)
    before = upkeep.size()
    assert before.total_bytes > 0 and before.detail
    await upkeep.apply(await upkeep.plan_delete(sids[:6]))
    was, now = await upkeep.compact(full=True)
    assert was.total_bytes >= before.total_bytes * 0.9
    assert now.total_bytes < was.total_bytes * 0.6, (was, now)
    assert now.reclaimable_bytes == 0
    assert await _ids(store) == set(sids[6:])
    assert len(await store.load({"project_key": PROJECT, "session_id": sids[7]}) or []) == 20
    # Compacting again, or the plain kind, is harmless.
    await upkeep.compact()
    assert await _ids(store) == set(sids[6:])


async def test_a_read_only_store_is_measured_and_planned_on_but_never_changed(
    make: Callable[..., Any], tmp_path: Path
) -> None:
    store = make()
    sid = await _session(store, 1)
    looker = StoreUpkeep(make(like=store, read_only=True))
    assert looker.size().total_bytes == StoreUpkeep(store).size().total_bytes > 0
    plan = await looker.plan_delete([sid])
    with pytest.raises(ValueError, match="read-only"):
        await looker.apply(plan)
    with pytest.raises(ValueError, match="read-only"):
        await looker.compact()
    assert await _ids(store) == {sid}
    with pytest.raises(TypeError, match="bare backend"):
        StoreUpkeep(TrimmingSessionStore(store, tmp_path))
