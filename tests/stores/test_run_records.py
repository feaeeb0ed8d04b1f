"""Run records (a run's manifest rows and lineage) on real SQLite files and a real PostgreSQL server."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from flower_stores import (
    LeaseOwner,
    PruningSessionStore,
    RunRecords,
    SqliteSessionStore,
    StoreError,
    TrimmingSessionStore,
)

KEY: Any = {"project_key": "-ws", "session_id": "5f0c8f0e-1111-4000-8000-000000000001"}


def _row(step: str, started: float, **more: Any) -> dict[str, Any]:
    """A manifest row as `StepResult.row` writes it (the fields analyze reads, and a few)."""
    return {
        "step": step,
        "session_id": f"sid-{step}",
        "ok": True,
        "cost_usd": 0.01,
        "started_at": started,
        "ended_at": started + 5.0,
        "attempts": 1,
        "run": "run-1",
        **more,
    }


@pytest.fixture(params=["sqlite", "postgres"])
def make(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[..., Any]]:
    """``make()`` opens a fresh store of the parametrised backend; ``make(like=store)`` another one on the same
    data (a second machine), and ``read_only=True`` one that only looks."""
    opened: list[SqliteSessionStore] = []
    if request.param == "postgres":
        pg_store = request.getfixturevalue("pg_store")

        def pg(like: Any = None, **options: Any) -> Any:
            return pg_store(schema=like.schema if like is not None else None, **options)

        yield pg
        return

    def sqlite(like: Any = None, **options: Any) -> SqliteSessionStore:
        path = like.path if like is not None else tmp_path / f"sessions-{len(opened)}.db"
        store = SqliteSessionStore(path, **options)
        opened.append(store)
        return store

    yield sqlite
    for store in opened:
        store.close()


async def test_rows_round_trip_and_upsert_by_step_and_start(make: Callable[..., Any]) -> None:
    store = make()
    assert isinstance(store, RunRecords)
    assert store.run_rows("run-1") == [] and store.lineage("run-1") == {} and store.run_ids() == []
    in_flight = _row("build", 100.0, ok=False, ended_at=0.0, text="")
    await store.put_run_rows("run-1", [in_flight, _row("plan", 50.0, text="ünïcode \U0001f600 and a lone \ud83d")])
    assert store.run_rows("run-1") == [_row("plan", 50.0, text="ünïcode \U0001f600 and a lone \ud83d"), in_flight]
    # The same step and start: replaced (in flight -> done); a new start of the step (a retry): added.
    done = _row("build", 100.0, text="built")
    retry = _row("build", 200.0, attempts=2)
    await store.put_run_rows("run-1", [done, retry])
    assert [(r["step"], r["started_at"], r.get("text")) for r in store.run_rows("run-1")] == [
        ("plan", 50.0, "ünïcode \U0001f600 and a lone \ud83d"),
        ("build", 100.0, "built"),
        ("build", 200.0, None),
    ]
    # Rows that share a start keep the order they were first stored in, also after an upsert.
    await store.put_run_rows("run-2", [_row("b", 7.0), _row("a", 7.0)])
    await store.put_run_rows("run-2", [_row("a", 7.0, ok=False)])
    assert [(r["step"], r["ok"]) for r in store.run_rows("run-2")] == [("b", True), ("a", False)]
    assert [r["step"] for r in store.run_rows("run-1")] == ["plan", "build", "build"]  # other runs untouched


async def test_lineage_and_run_ids_newest_first(make: Callable[..., Any]) -> None:
    store = make()
    await store.put_lineage("run-old", "plan", "sid-1")
    await store.put_run_rows("run-mid", [_row("x", 1.0)])
    await store.put_lineage("run-new", "plan", "sid-9")
    await store.put_lineage("run-old", "build", "sid-2")
    await store.put_lineage("run-old", "plan", "sid-3")  # a later session of the step replaces the earlier
    assert store.lineage("run-old") == {"plan": "sid-3", "build": "sid-2"}
    assert store.lineage("run-new") == {"plan": "sid-9"} and store.lineage("run-mid") == {}
    # Newest first by the first record: run-old keeps its place although it was written to last.
    assert store.run_ids() == ["run-new", "run-mid", "run-old"]


async def test_another_machine_reads_what_one_wrote(make: Callable[..., Any]) -> None:
    one = make()
    two = make(like=one)
    await one.put_run_rows("run-1", [_row("plan", 1.0)])
    await one.put_lineage("run-1", "plan", "sid-plan")
    assert two.run_rows("run-1") == [_row("plan", 1.0)] and two.lineage("run-1") == {"plan": "sid-plan"}
    await two.put_run_rows("run-1", [_row("build", 2.0)])
    assert [r["step"] for r in one.run_rows("run-1")] == ["plan", "build"]
    reader = make(like=one, read_only=True)
    assert reader.run_ids() == ["run-1"] and len(reader.run_rows("run-1")) == 2
    with pytest.raises(StoreError, match="read-only"):
        await reader.put_run_rows("run-1", [_row("x", 3.0)])
    with pytest.raises(StoreError, match="read-only"):
        await reader.put_lineage("run-1", "x", "sid")


async def test_concurrent_writers_of_one_run_lose_nothing(make: Callable[..., Any]) -> None:
    stores = [make()]
    stores += [make(like=stores[0]) for _ in range(3)]

    async def write(n: int) -> None:
        store = stores[n % len(stores)]
        await store.put_run_rows("run-1", [_row(f"step-{n}", float(n))])
        await store.put_lineage("run-1", f"step-{n}", f"sid-{n}")

    async with anyio.create_task_group() as tg:
        for n in range(16):
            tg.start_soon(write, n)
    assert [r["step"] for r in stores[0].run_rows("run-1")] == [f"step-{n}" for n in range(16)]
    assert stores[0].lineage("run-1") == {f"step-{n}": f"sid-{n}" for n in range(16)}
    assert stores[0].run_ids() == ["run-1"]


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([{"started_at": 1.0}], "row 0 has no step name"),
        ([_row("ok", 1.0), {"step": "", "started_at": 1.0}], "row 1 has no step name"),
        ([_row("x", 1.0) | {"started_at": "soon"}], "row 0 \\('x'\\) has started_at 'soon'"),
        ([_row("x", 1.0) | {"started_at": True}], "started_at True"),
        ([_row("x", 1.0) | {"blob": object()}], "row 0 \\('x'\\) is not JSON"),
        (["not a row"], "row 0 is a str"),
        ({"step": "x"}, "rows must be a list"),
    ],
)
async def test_a_row_that_cannot_be_stored_is_refused_and_nothing_of_the_batch_is_kept(
    make: Callable[..., Any], rows: Any, message: str
) -> None:
    store = make()
    with pytest.raises(ValueError, match=message):
        await store.put_run_rows("run-1", rows)
    assert store.run_rows("run-1") == [] and store.run_ids() == []
    for bad in ("", "  ", None):
        with pytest.raises(ValueError, match="run id"):
            await store.put_run_rows(bad, [_row("x", 1.0)])
    with pytest.raises(ValueError, match="session id"):
        await store.put_lineage("run-1", "x", "")


async def test_a_row_without_a_start_is_keyed_at_zero(make: Callable[..., Any]) -> None:
    store = make()
    await store.put_run_rows("run-1", [{"step": "x", "n": 1}])
    await store.put_run_rows("run-1", [{"step": "x", "n": 2}])
    assert store.run_rows("run-1") == [{"step": "x", "n": 2}]


async def test_the_layers_pass_run_records_through_and_a_fenced_view_does_not(
    make: Callable[..., Any], tmp_path: Path
) -> None:
    store = make()
    for layer in (TrimmingSessionStore(store, tmp_path), PruningSessionStore(store, tmp_path)):
        assert isinstance(layer, RunRecords)
        await layer.put_run_rows("run-1", [_row(type(layer).__name__, 1.0)])
        await layer.put_lineage("run-1", "s", type(layer).__name__)
        assert layer.run_rows("run-1") == store.run_rows("run-1") and layer.run_ids() == ["run-1"]
        assert layer.lineage("run-1") == store.lineage("run-1")
    assert len(store.run_rows("run-1")) == 2
    lease = await store.acquire_lease(KEY["project_key"], KEY["session_id"], LeaseOwner("box", 1, "run-1"))
    assert not isinstance(store.fenced(lease), RunRecords)


# --- older stores --------------------------------------------------------------------------------------------


async def test_a_postgres_schema_from_before_run_records_is_read_empty_then_migrated_by_a_writer(
    pg_store: Any, pg_url: str
) -> None:
    import psycopg

    store = pg_store()
    await store.append(KEY, [{"type": "user", "uuid": "u1", "message": {"role": "user", "content": "hi"}}])
    with psycopg.connect(pg_url, autocommit=True) as conn:  # make it a version-2 schema, as the lease release left it
        for table in ("runs", "run_rows", "run_lineage"):
            conn.execute(f'DROP TABLE "{store.schema}".{table}')
        conn.execute(f"UPDATE \"{store.schema}\".store_info SET value = '2' WHERE name = 'schema_version'")
    reader = pg_store(schema=store.schema, read_only=True)
    assert reader.run_rows("run-1") == [] and reader.lineage("run-1") == {} and reader.run_ids() == []
    with psycopg.connect(pg_url) as conn:  # the reader migrated nothing
        assert conn.execute("SELECT to_regclass(%s)", (f'"{store.schema}".run_rows',)).fetchone() == (None,)
    writer = pg_store(schema=store.schema)
    await writer.put_run_rows("run-1", [_row("plan", 1.0)])
    assert reader.run_rows("run-1") == [_row("plan", 1.0)] and len(await writer.load(KEY) or []) == 1
    with psycopg.connect(pg_url) as conn:
        # migrated to this release's version (4: the run log's tables too)
        assert conn.execute(f'SELECT value FROM "{store.schema}".store_info').fetchone() == ("4",)


async def test_a_sqlite_file_from_before_run_records_is_read_empty_then_gains_the_tables(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    SqliteSessionStore(db).close()
    with sqlite3.connect(db) as conn:
        for table in ("runs", "run_rows", "run_lineage"):
            conn.execute(f"DROP TABLE {table}")
    with SqliteSessionStore(db, read_only=True) as reader:
        assert reader.run_rows("run-1") == [] and reader.lineage("run-1") == {} and reader.run_ids() == []
    with SqliteSessionStore(db) as writer:
        await writer.put_lineage("run-1", "plan", "sid")
    with SqliteSessionStore(db, read_only=True) as reader:
        assert reader.lineage("run-1") == {"plan": "sid"}
