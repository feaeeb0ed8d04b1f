"""The session lease on real SQLite files and a real PostgreSQL server: one driver per session, fenced appends."""

from __future__ import annotations

import hashlib
import re
import sqlite3
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import pytest
from claude_agent_sdk import InMemorySessionStore
from claude_agent_sdk._internal.session_store_validation import _store_implements  # the SDK's own probe
from claude_agent_sdk.testing import run_session_store_conformance
from stores._transcripts import Transcript

from flower_stores import (
    FencedSessionStore,
    Lease,
    LeaseHeld,
    LeaseLost,
    LeaseOwner,
    PruningSessionStore,
    SessionLeases,
    SqliteSessionStore,
    StoreError,
    TrimmingSessionStore,
    TrimPolicy,
    hold_lease,
    trim_report,
)

SID = "5f0c8f0e-1111-4000-8000-000000000001"
KEY: Any = {"project_key": "-ws", "session_id": SID}
SUB: Any = {**KEY, "subpath": "subagents/agent-a1"}
OTHER: Any = {"project_key": "-ws", "session_id": "another"}
A = LeaseOwner("box-a", 101, "run-A")
B = LeaseOwner("box-b", 202, "run-B")
C = LeaseOwner("box-c", 303, "")
OPTIONAL = ("list_sessions", "list_session_summaries", "delete", "list_subkeys")


def _entries(prefix: str, n: int = 2) -> list[dict[str, Any]]:
    return [{"type": "user", "uuid": f"{prefix}-{i}", "message": {"role": "user", "content": prefix}} for i in range(n)]


@pytest.fixture(params=["sqlite", "postgres"])
def make(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Any]]:
    """``make()`` opens a fresh, empty store of the parametrised backend (closed at the end)."""
    opened: list[SqliteSessionStore] = []
    if request.param == "postgres":
        pg_store = request.getfixturevalue("pg_store")
        yield pg_store
        return

    def sqlite() -> SqliteSessionStore:
        store = SqliteSessionStore(tmp_path / f"sessions-{len(opened)}.db")
        opened.append(store)
        return store

    yield sqlite
    for store in opened:
        store.close()


async def _expire(store: Any, lease: Lease) -> None:
    """Let ``lease`` lapse: wait out a short ttl on the storage clock."""
    while await store.read_lease(lease.project_key, lease.session_id) is not None:
        await anyio.sleep(0.02)


async def test_a_second_owner_is_refused_and_told_who_drives(make: Callable[[], Any]) -> None:
    store = make()
    lease = await store.acquire_lease("-ws", SID, A, ttl=42)
    assert (lease.owner, lease.epoch, lease.project_key, lease.session_id) == (A, 1, "-ws", SID)
    assert lease.acquired_at == lease.renewed_at < lease.expires_at and lease.ttl == 42
    assert abs((lease.acquired_at - datetime.now(UTC)).total_seconds()) < 5  # the storage clock is this machine's
    with pytest.raises(LeaseHeld) as caught:
        await store.acquire_lease("-ws", SID, B)
    message = str(caught.value)
    assert re.fullmatch(
        r"session 5f0c8f0e is driven by box-a/pid 101 \(run run-A\) since \d\d:\d\d:\d\d UTC; the lease expires in (41|42) s",
        message,
    ), message
    assert caught.value.lease == lease and 40 < caught.value.remaining <= 42
    assert isinstance(caught.value, StoreError)
    assert await store.read_lease("-ws", SID) == lease
    assert await store.read_lease("-ws", "never") is None
    # Another session is free.
    assert (await store.acquire_lease("-ws", "another", B)).epoch == 1


async def test_an_expired_lease_is_taken_over_at_the_next_epoch(make: Callable[[], Any]) -> None:
    store = make()
    first = await store.acquire_lease("-ws", SID, A, ttl=0.05)
    await _expire(store, first)
    second = await store.acquire_lease("-ws", SID, B, ttl=30)
    assert second.epoch == first.epoch + 1 and second.owner == B and second.acquired_at >= first.expires_at
    third_try = await store.read_lease("-ws", SID)
    assert third_try == second


async def test_the_stale_holders_append_is_refused_and_nothing_is_written(make: Callable[[], Any]) -> None:
    store = make()
    old = await store.acquire_lease("-ws", SID, A, ttl=0.05)
    stale = store.fenced(old)
    await stale.append(KEY, _entries("a"))
    await stale.append(SUB, _entries("a-sub"))
    await _expire(store, old)
    # Lapsed, but nobody took over: the holder's late writes (the SDK's last flush) are still the session's.
    await stale.append(KEY, _entries("late", 1))
    new = await store.acquire_lease("-ws", SID, B)
    fresh = store.fenced(new)
    await fresh.append(KEY, _entries("b"))
    before = await store.load(KEY), await store.load(SUB), await store.list_sessions("-ws")
    for key, batch in [(KEY, _entries("stale")), (SUB, _entries("stale-sub")), (KEY, _entries("a"))]:
        with pytest.raises(
            LeaseLost, match=r"epoch 1 was taken over at epoch 2 by box-b/pid 202 \(run run-B\)"
        ) as lost:
            await stale.append(key, batch)
        assert lost.value.epoch == 1 and lost.value.current == new
    assert (await store.load(KEY), await store.load(SUB), await store.list_sessions("-ws")) == before
    uuids = [e["uuid"] for e in await store.load(KEY) or []]
    assert uuids == ["a-0", "a-1", "late-0", "b-0", "b-1"]  # nothing stale, nothing twice
    # Appends to another session go through the view unfenced.
    await stale.append(OTHER, _entries("other", 1))
    assert [e["uuid"] for e in await store.load(OTHER) or []] == ["other-0"]
    # The plain store is not fenced at all: fencing is the view's, for whoever holds a lease.
    await store.append(KEY, _entries("plain", 1))


async def test_renewal_extends_until_a_takeover_then_raises(make: Callable[[], Any]) -> None:
    store = make()
    lease = await store.acquire_lease("-ws", SID, A, ttl=0.3)
    renewed = await store.renew_lease(lease, ttl=60)
    assert renewed.epoch == lease.epoch and renewed.acquired_at == lease.acquired_at
    assert renewed.renewed_at >= lease.renewed_at and renewed.ttl == 60
    assert (await store.renew_lease(renewed)).ttl == 60  # without ttl: the lease's own
    short = await store.renew_lease(renewed, ttl=0.05)
    await _expire(store, short)
    back = await store.renew_lease(short, ttl=60)  # lapsed, nobody took over: it may go on
    assert back.epoch == lease.epoch and await store.read_lease("-ws", SID) == back
    await _expire(store, await store.renew_lease(back, ttl=0.05))
    taken = await store.acquire_lease("-ws", SID, B)
    with pytest.raises(LeaseLost, match="taken over at epoch 2 by box-b") as lost:
        await store.renew_lease(back)
    assert lost.value.current == taken
    assert await store.read_lease("-ws", SID) == taken


async def test_release_frees_the_session_at_once_and_keeps_the_epoch(make: Callable[[], Any]) -> None:
    store = make()
    lease = await store.acquire_lease("-ws", SID, A, ttl=600)
    assert await store.release_lease(lease) is True
    assert await store.release_lease(lease) is False  # already released
    assert await store.read_lease("-ws", SID) is None
    with pytest.raises(LeaseLost, match="was released; acquire it again"):
        await store.renew_lease(lease)
    await store.fenced(lease).append(KEY, _entries("after-release", 1))  # nobody took over: kept
    successor = await store.acquire_lease("-ws", SID, B)
    assert successor.epoch == 2  # epochs never restart, or a stale epoch could come round again
    assert await store.release_lease(lease) is False  # not its lease any more
    with pytest.raises(LeaseLost):
        await store.fenced(lease).append(KEY, _entries("too-late", 1))
    # The same owner, after releasing, acquires anew: a new epoch.
    assert await store.release_lease(successor)
    assert (await store.acquire_lease("-ws", SID, B)).epoch == 3


async def test_the_same_owner_acquiring_again_keeps_its_epoch(make: Callable[[], Any]) -> None:
    store = make()
    lease = await store.acquire_lease("-ws", SID, A, ttl=30)
    again = await store.acquire_lease("-ws", SID, A, ttl=90)
    assert again.epoch == lease.epoch and again.acquired_at == lease.acquired_at and again.ttl == 90
    await store.fenced(lease).append(KEY, _entries("first-step", 1))  # the run's earlier view is not fenced out
    other_run = LeaseOwner(A.host, A.pid, "another-run")  # same process, another run: another owner
    with pytest.raises(LeaseHeld):
        await store.acquire_lease("-ws", SID, other_run)


async def test_an_explicit_epoch_must_exceed_the_stored_one(make: Callable[[], Any]) -> None:
    store = make()
    lease = await store.acquire_lease("-ws", SID, A, ttl=30, epoch=5)  # a fleet's attempt number
    assert lease.epoch == 5
    with pytest.raises(LeaseHeld):  # a higher epoch orders takeovers, it does not break a live lease
        await store.acquire_lease("-ws", SID, B, epoch=6)
    # Shortened only now: a 50 ms lease may lapse before the check above on a loaded machine.
    await _expire(store, await store.renew_lease(lease, ttl=0.05))
    for stale in (5, 3):
        with pytest.raises(
            LeaseLost, match=rf"epoch {stale} is not newer than the stored epoch 5 \(last held by box-a"
        ):
            await store.acquire_lease("-ws", SID, B, epoch=stale)
    taken = await store.acquire_lease("-ws", SID, B, epoch=9)
    assert taken.epoch == 9
    with pytest.raises(LeaseLost, match=r"epoch 7 is not newer than the stored epoch 9 \(held by box-b/pid 202"):
        await store.acquire_lease("-ws", SID, C, epoch=7)
    # The holder retrying its own acquire with the same epoch (a reply lost in flight) gets its lease back.
    assert (await store.acquire_lease("-ws", SID, B, epoch=9)).epoch == 9
    # And an acquire without an epoch after all that goes on from the stored one.
    await store.release_lease(taken)
    assert (await store.acquire_lease("-ws", SID, C)).epoch == 10


async def test_bad_arguments_are_usage_errors(make: Callable[[], Any]) -> None:
    store = make()
    for ttl in (0, -1, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="a lease ttl is a positive number of seconds"):
            await store.acquire_lease("-ws", SID, A, ttl=ttl)
    for epoch in (0, -3, True):
        with pytest.raises(ValueError, match="a lease epoch is a whole number >= 1"):
            await store.acquire_lease("-ws", SID, A, epoch=epoch)
    with pytest.raises(TypeError, match="LeaseOwner.this_process"):
        await store.acquire_lease("-ws", SID, ("host", 1, "run"))
    lease = await store.acquire_lease("-ws", SID, A)
    with pytest.raises(ValueError, match="cannot fence an append to session another"):
        await store.append_fenced(OTHER, _entries("x", 1), lease=lease)
    with pytest.raises(TypeError, match="the Lease that acquire_lease returned"):
        FencedSessionStore(store, "epoch 1")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="needs a store that grants leases"):
        FencedSessionStore(InMemorySessionStore(), lease)  # type: ignore[arg-type]


async def test_the_layers_pass_the_lease_through_and_a_fenced_layer_still_rewrites(
    make: Callable[[], Any], tmp_path: Path
) -> None:
    backend = make()
    layered = PruningSessionStore(backend, tmp_path, policy=TrimPolicy(keep_recent=0))
    assert isinstance(layered, SessionLeases)
    lease = await layered.acquire_lease("-ws", SID, A)
    assert await backend.read_lease("-ws", SID) == lease == await layered.read_lease("-ws", SID)
    view = layered.fenced(lease)
    t = Transcript()
    t.user("go")
    t.bash("cat big.log", "output line\n" * 400)
    t.bash("make", "ok")
    t.api_error()
    await view.append(KEY, t.entries)
    out = await view.load(KEY)
    assert out is not None and not any(e.get("isApiErrorMessage") for e in out)  # pruned on the way out
    assert trim_report(view).startswith("trimmed 1 tool result") and view.last_report == layered.last_report
    assert await backend.load(KEY) == t.entries  # the stored copy is the full transcript
    # The view presents exactly the optional methods of what it wraps (the SDK probes for them).
    for method in OPTIONAL:
        assert _store_implements(view, method) == _store_implements(layered, method) is True, method
    assert view.has_session("-ws", SID) and view.has_entry("-ws", SID, t.entries[0]["uuid"])
    # Taken over through the backend directly: the view over the layer is fenced all the same.
    await layered.release_lease(lease)
    await backend.acquire_lease("-ws", SID, B)
    with pytest.raises(LeaseLost):
        await view.append(KEY, _entries("late", 1))
    assert await backend.load(KEY) == t.entries


async def test_a_fenced_view_passes_the_sdk_conformance_suite(make: Callable[[], Any], tmp_path: Path) -> None:
    """A view is a whole session store. Leased on the suite's own session, so its appends (main and subkeys)
    all go through the fence; its other sessions pass through."""

    async def open_view() -> Any:
        store = TrimmingSessionStore(make(), tmp_path)
        return store.fenced(await store.acquire_lease("proj", "sess", A))

    await run_session_store_conformance(open_view)


# --- the tables: created with the schema, added to older stores, never written by a read-only store --------


def _fingerprint(directory: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(directory.iterdir())}


async def test_a_sqlite_file_from_before_leases_gains_the_table_when_a_writer_opens_it(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    with SqliteSessionStore(db) as store:
        await store.append(KEY, _entries("old", 3))
    conn = sqlite3.connect(db)
    conn.execute("DROP TABLE leases")  # now it is a file an earlier release wrote
    conn.close()
    before = _fingerprint(tmp_path)
    with SqliteSessionStore(db, read_only=True) as reader:  # looking changes nothing and sees no lease
        assert await reader.read_lease("-ws", SID) is None
        with pytest.raises(StoreError, match="read-only"):
            await reader.acquire_lease("-ws", SID, A)
    assert _fingerprint(tmp_path) == before
    with SqliteSessionStore(db) as store:
        lease = await store.acquire_lease("-ws", SID, A)
        await store.fenced(lease).append(KEY, _entries("new", 1))
        assert len(await store.load(KEY) or []) == 4
    with SqliteSessionStore(db, read_only=True) as reader:
        assert await reader.read_lease("-ws", SID) == lease


async def test_a_postgres_schema_from_before_leases_is_migrated_by_a_writer(pg_store: Any, pg_url: str) -> None:
    import psycopg

    store = pg_store()
    await store.append(KEY, _entries("old", 3))
    with psycopg.connect(pg_url, autocommit=True) as conn:  # make it a version-1 schema, as 0.1 wrote it
        conn.execute(f'DROP TABLE "{store.schema}".leases')
        conn.execute(f"UPDATE \"{store.schema}\".store_info SET value = '1' WHERE name = 'schema_version'")
    reader = pg_store(schema=store.schema, read_only=True)
    assert await reader.read_lease("-ws", SID) is None
    with pytest.raises(StoreError, match="read-only"):
        await reader.acquire_lease("-ws", SID, A)
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT to_regclass(%s)", (f'"{store.schema}".leases',)).fetchone() == (None,)
    writer = pg_store(schema=store.schema)
    lease = await writer.acquire_lease("-ws", SID, A)
    await writer.fenced(lease).append(KEY, _entries("new", 1))
    assert len(await writer.load(KEY) or []) == 4 and await reader.read_lease("-ws", SID) == lease
    with psycopg.connect(pg_url) as conn:
        assert conn.execute(f'SELECT value FROM "{store.schema}".store_info').fetchone() == ("4",)  # this release's


# --- hold_lease: acquire, keep renewed, stop the work when lost, release ------------------------------------


async def test_hold_lease_renews_while_the_work_runs_and_releases_after(make: Callable[[], Any]) -> None:
    store = make()
    async with hold_lease(store, "-ws", SID, A, ttl=0.3) as view:
        first = view.lease
        await anyio.sleep(0.7)  # more than twice the ttl: only renewals keep it
        assert view.lease.epoch == first.epoch and view.lease.expires_at > first.expires_at
        assert await store.read_lease("-ws", SID) is not None
        with pytest.raises(LeaseHeld):
            await store.acquire_lease("-ws", SID, B)
        await view.append(KEY, _entries("held", 1))
    assert await store.read_lease("-ws", SID) is None  # released: the next driver need not wait
    assert (await store.acquire_lease("-ws", SID, B)).epoch == first.epoch + 1


async def test_hold_lease_stops_the_work_when_the_lease_is_lost(make: Callable[[], Any]) -> None:
    store = make()
    reached: list[str] = []
    with pytest.raises(LeaseLost, match="taken over at epoch 2 by box-b"):
        async with hold_lease(store, "-ws", SID, A, ttl=0.3) as view:
            await store.release_lease(view.lease)  # as if it had lapsed while this process was frozen ...
            await store.acquire_lease("-ws", SID, B)  # ... and another took the session over
            reached.append("taken over")
            await anyio.sleep(5)  # the work goes on until the next renewal finds out
            reached.append("never")
    assert reached == ["taken over"]
    current = await store.read_lease("-ws", SID)
    assert current is not None and current.owner == B  # the new holder's lease is left alone (not released)


async def test_hold_lease_lets_the_works_own_error_through_and_still_releases(make: Callable[[], Any]) -> None:
    store = make()
    with pytest.raises(KeyError, match="the work's own"):
        async with hold_lease(store, "-ws", SID, A):
            raise KeyError("the work's own")  # not wrapped in an ExceptionGroup
    assert await store.read_lease("-ws", SID) is None
    with pytest.raises(LeaseHeld):  # acquiring fails before the body runs
        async with hold_lease(store, "-ws", "another", A), hold_lease(store, "-ws", "another", B):
            pass
    with anyio.move_on_after(0.2):  # cancelled from outside: released all the same
        async with hold_lease(store, "-ws", SID, A):
            await anyio.sleep(5)
    assert await store.read_lease("-ws", SID) is None


def test_hold_lease_under_trio(tmp_path: Path) -> None:
    async def main() -> None:
        with SqliteSessionStore(tmp_path / "sessions.db") as store:
            async with hold_lease(store, "-ws", SID, A, ttl=0.15) as view:
                await anyio.sleep(0.4)
                await view.append(KEY, _entries("trio", 1))
            assert await store.read_lease("-ws", SID) is None
            with pytest.raises(LeaseLost):
                async with hold_lease(store, "-ws", SID, A, ttl=0.15) as view:
                    await store.release_lease(view.lease)
                    await store.acquire_lease("-ws", SID, B)
                    await anyio.sleep(5)

    anyio.run(main, backend="trio")


# --- abandoned leases: a dead process of this machine ---------------------------------------------------------


def _dead_pid() -> int:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, check=True)
    return int(done.stdout)  # the child was reaped: its pid names no process now


async def test_a_lease_of_a_dead_process_of_this_machine_is_taken_over_at_once(make: Callable[[], Any]) -> None:
    import socket

    from flower_stores import is_abandoned, take_lease

    store = make()
    dead = LeaseOwner(socket.gethostname(), _dead_pid(), "run-killed")
    assert is_abandoned(dead) and not is_abandoned(LeaseOwner.this_process("me"))
    assert not is_abandoned(LeaseOwner("another-box", dead.pid, "run-far")), "another machine's pid is not ours"
    stale = await store.acquire_lease("-ws", SID, dead, ttl=600)
    taken = await take_lease(store, "-ws", SID, A, ttl=30)
    assert taken.owner == A and taken.epoch == stale.epoch + 1, "epochs keep growing"
    with pytest.raises(LeaseLost):  # the dead holder's lease is fenced out like any superseded one
        await store.append_fenced(KEY, _entries("late"), lease=stale)
    # A live holder elsewhere is not touched: refused as acquire_lease refuses it.
    with pytest.raises(LeaseHeld):
        await take_lease(store, "-ws", SID, B, ttl=30)
    # And without break_abandoned, a dead holder's lease is waited out too.
    await store.release_lease(taken)
    await store.acquire_lease("-ws", SID, dead, ttl=600)
    with pytest.raises(LeaseHeld):
        await take_lease(store, "-ws", SID, B, ttl=30, break_abandoned=False)


async def test_hold_lease_takes_over_a_dead_processs_lease(make: Callable[[], Any]) -> None:
    import socket

    store = make()
    dead = LeaseOwner(socket.gethostname(), _dead_pid(), "run-killed")
    await store.acquire_lease("-ws", SID, dead, ttl=600)
    async with hold_lease(store, "-ws", SID, A, ttl=30) as view:
        assert view.lease.owner == A and view.lease.epoch == 2
        await view.append(KEY, _entries("mine"))
    assert [e["uuid"] for e in await store.load(KEY)] == ["mine-0", "mine-1"]
