"""Property tests of the session lease: any interleaving of acquire / renew / release / fenced append / expiry
by several owners, on a real SQLite file and a real PostgreSQL server, keeps the invariants.

- at most one live holder, and it is the owner of the newest epoch granted;
- epochs strictly increase from one owner to the next (the same owner acquiring again keeps its epoch);
- an append is accepted exactly when its lease holds the then-current epoch; what the store holds afterwards is
  exactly the accepted appends, in order, none twice, their epochs never going back.

The expected outcome of each step comes from a small model of the rules (the module docstring of
``flower_stores.lease._rules``); the invariants are checked against the store itself, independently of the model.
Expiry is made, not waited for: the stored ``expires_at`` is moved into the past on the storage clock.
"""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flower_stores import Lease, LeaseHeld, LeaseLost, LeaseOwner, SqliteSessionStore

OWNERS = [LeaseOwner(f"host-{i}", 100 + i, f"run-{i}") for i in range(3)]
TTL = 600.0  # nothing lapses on its own within an example: only the `expire` step ends a lease by time

owner_index = st.integers(0, len(OWNERS) - 1)
acquire = st.tuples(st.just("acquire"), owner_index, st.one_of(st.none(), st.integers(1, 6)))
append = st.tuples(st.just("append"), owner_index, st.booleans())  # True: to a subagent transcript
# Acquires and appends twice as likely as the rest: the interesting scripts are takeovers followed by a stale
# holder's append.
steps = st.lists(
    st.one_of(
        acquire,
        acquire,
        append,
        append,
        st.tuples(st.just("renew"), owner_index, st.none()),
        st.tuples(st.just("release"), owner_index, st.none()),
        st.tuples(st.just("expire"), st.just(0), st.none()),
    ),
    min_size=1,
    max_size=30,
)

_sessions = itertools.count()


@dataclass
class Model:
    """The stored lease as the rules say it should be."""

    epoch: int = 0  # 0: never leased
    owner: int = -1
    live: bool = False
    released: bool = False


def _expire_sqlite(store: SqliteSessionStore, project_key: str, session_id: str) -> None:
    with store._transaction() as db:  # the SQLite store's clock is this machine's wall clock
        db.execute(
            "UPDATE leases SET expires_at = ? WHERE project_key = ? AND session_id = ?",
            (int(time.time() * 1000) - 1, project_key, session_id),
        )


def _expire_postgres(store: Any, project_key: str, session_id: str) -> None:
    def work(conn: Any) -> None:
        conn.execute(
            f"UPDATE {store._sql.s}.leases SET expires_at = (extract(epoch FROM clock_timestamp()) * 1000)::bigint - 1 "
            "WHERE project_key = %s AND session_id = %s",
            (project_key, session_id),
        )

    store._run(work)


async def _run(store: Any, expire: Any, script: list[tuple[str, int, Any]]) -> None:
    project, session = "-props", f"s{next(_sessions)}"
    main: Any = {"project_key": project, "session_id": session}
    sub: Any = {**main, "subpath": "subagents/agent-x"}
    model = Model()
    held: list[Lease | None] = [None] * len(OWNERS)  # each owner's latest lease, stale or not
    granted: list[tuple[int, int]] = []  # (epoch, owner) of every successful acquire, in order
    accepted: dict[str, list[tuple[str, int]]] = {"main": [], "sub": []}
    counter = itertools.count()

    for action, o, arg in script:
        owner = OWNERS[o]
        if action == "acquire":
            mine = model.owner == o and not model.released
            if model.epoch and arg is not None and (arg < model.epoch or (arg == model.epoch and not mine)):
                expected = "lost"
            elif model.epoch and mine and arg in (None, model.epoch):
                expected = "same"
            elif model.live and not mine:
                expected = "held"
            else:
                expected = "new"
            try:
                lease = await store.acquire_lease(project, session, owner, ttl=TTL, epoch=arg)
            except LeaseHeld as exc:
                assert expected == "held", (expected, script)
                assert exc.lease.owner == OWNERS[model.owner] and exc.lease.epoch == model.epoch
                continue
            except LeaseLost:
                assert expected == "lost", (expected, script)
                continue
            assert expected in ("same", "new"), (expected, script)
            if expected == "same":
                assert lease.epoch == model.epoch
            else:
                assert lease.epoch == (arg if arg is not None else model.epoch + 1)
                # epochs strictly increase over every epoch granted before
                assert all(lease.epoch > e for e, _ in granted), (granted, lease.epoch)
            granted.append((lease.epoch, o))
            model = Model(lease.epoch, o, live=True, released=False)
            held[o] = lease
        elif action == "renew":
            lease = held[o]
            if lease is None:
                continue
            ok = lease.epoch == model.epoch and not model.released
            try:
                held[o] = await store.renew_lease(lease, ttl=TTL)
            except LeaseLost:
                assert not ok, script
                continue
            assert ok, script
            model.live = True
        elif action == "release":
            lease = held[o]
            if lease is None:
                continue
            ok = lease.epoch == model.epoch and not model.released
            assert await store.release_lease(lease) is ok, script
            if ok:
                model.live, model.released = False, True
        elif action == "append":
            lease = held[o]
            if lease is None:
                continue
            n = next(counter)
            uid = f"{o}-{n}"
            where = "sub" if arg else "main"
            try:
                await store.fenced(lease).append(
                    sub if arg else main, [{"type": "user", "uuid": uid, "epoch": lease.epoch}]
                )
            except LeaseLost:
                assert lease.epoch != model.epoch, script  # refused only when superseded
                continue
            assert lease.epoch == model.epoch, script  # accepted only from the then-current epoch
            accepted[where].append((uid, lease.epoch))
        elif action == "expire":
            expire(store, project, session)
            model.live = False

        # At most one live holder: the store's, which is the owner of the newest epoch granted.
        current = await store.read_lease(project, session)
        if model.live:
            assert current is not None and current.epoch == model.epoch and current.owner == OWNERS[model.owner]
            assert granted and granted[-1] == (model.epoch, model.owner)
        else:
            assert current is None, (current, script)

    for where, key in (("main", main), ("sub", sub)):
        stored = [(e["uuid"], e["epoch"]) for e in await store.load(key) or []]
        assert stored == accepted[where], script  # exactly the accepted appends, in order, none twice
        epochs = [e for _, e in stored]
        assert epochs == sorted(epochs)  # the writer's epoch never goes back


def _settings(examples: int) -> settings:
    # The stores are opened once per module (an example leases a session of its own), hence the health check.
    return settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )


@pytest.fixture(scope="module")
def sqlite_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SqliteSessionStore]:
    with SqliteSessionStore(Path(tmp_path_factory.mktemp("lease-props")) / "sessions.db") as store:
        yield store


@pytest.fixture(scope="module")
def postgres_store(pg_url: str) -> Iterator[Any]:
    import psycopg

    from flower_stores import PostgresSessionStore

    schema = f"lease_props_{os.getpid()}"
    with PostgresSessionStore(pg_url, schema=schema) as store:
        yield store
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@_settings(300)
@given(script=steps)
def test_interleavings_on_sqlite(sqlite_store: SqliteSessionStore, script: list[tuple[str, int, Any]]) -> None:
    anyio.run(_run, sqlite_store, _expire_sqlite, script)


@_settings(100)
@given(script=steps)
def test_interleavings_on_postgres(postgres_store: Any, script: list[tuple[str, int, Any]]) -> None:
    anyio.run(_run, postgres_store, _expire_postgres, script)
