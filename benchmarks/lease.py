"""flower-stores benchmark: what fencing costs an append — ratios from one run.

    hatch run python benchmarks/lease.py [--batches 50] [--rounds 9] [--pg-url URL]

A fenced append (``store.fenced(lease).append``: the lease's epoch read and compared inside the append's write
transaction) against a plain ``store.append`` of the same batches — 100 small entries each (a few hundred
bytes, the shape where per-batch overheads show most), each batch one transaction. Goal: fenced <= 1.05x plain.

- ``sqlite``: `SqliteSessionStore` (the check is one indexed SELECT under the ``BEGIN IMMEDIATE`` lock);
- ``postgres``: `PostgresSessionStore` (one more statement in the append's pipeline, after the session's
  shared advisory lock: no extra round trip). The server: ``--pg-url``, ``FLOWER_TEST_PG_URL``, or a
  throw-away cluster with fsync on (``tests/pg_cluster.py``), as ``stores.py`` does; without one the row is
  skipped with the reason.

Each round opens a fresh store and appends every batch three times, back to back, in a rotating order: plainly
to one session, fenced to another, and plainly to a third — the control, whose ratio to the first is this
run's noise floor. Shown: the median of the per-batch ratios (steadiest on a shared machine) and the ratio of
the rounds' median totals. Absolute times vary from machine to machine; the ratios are the result.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

from flower_stores import LeaseOwner, SqliteSessionStore

HERE = Path(__file__).resolve().parent
BATCH = 100
KEY: Any = {"project_key": "-home-dev-project", "session_id": "00000000-0000-4000-8000-00000000bench"}


def _timed(fn: Callable[[], Any]) -> float:
    gc.collect()  # each measurement starts from the same collector state
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _round(store: Any, batches: list[list[dict[str, Any]]], shift: int) -> dict[str, list[float]]:
    """Seconds of each append of one round, batch by batch: plain, fenced, and plain again (the control).

    All go to one fresh store, to three sessions that grow alike: batch i goes to each, back to back, in an
    order that rotates from batch to batch, so the machine's drift falls on all three. The control is a plain
    append measured exactly like the fenced one: its ratio to the plain one is the noise floor of this run.
    """
    keys: dict[str, Any] = {
        "plain": {**KEY, "session_id": KEY["session_id"] + "-plain"},
        "fenced": KEY,
        "control": {**KEY, "session_id": KEY["session_id"] + "-control"},
    }

    async def run() -> dict[str, list[float]]:
        owner = LeaseOwner.this_process("bench")
        view = store.fenced(await store.acquire_lease(KEY["project_key"], KEY["session_id"], owner))
        targets = {"plain": store, "fenced": view, "control": store}
        times: dict[str, list[float]] = {name: [] for name in keys}
        names = list(keys)
        gc.collect()
        for i, batch in enumerate(batches):
            k = (i + shift) % 3
            for name in names[k:] + names[:k]:
                start = time.perf_counter()
                await targets[name].append(keys[name], batch)
                times[name].append(time.perf_counter() - start)
        return times

    return anyio.run(run)


def bench(name: str, open_store: Callable[[int], Any], batches: list[list[dict[str, Any]]], rounds: int) -> None:
    totals: dict[str, list[float]] = {"plain": [], "fenced": [], "control": []}  # per round
    pairs: dict[str, list[float]] = {"fenced": [], "control": []}  # x/plain of each batch
    for r in range(rounds):
        store = open_store(r)
        try:
            times = _round(store, batches, shift=r)
        finally:
            store.close()
        for k, v in times.items():
            totals[k].append(sum(v))
        for k in pairs:
            pairs[k] += [x / p for p, x in zip(times["plain"], times[k])]
    med = {k: statistics.median(v) for k, v in totals.items()}
    entries = sum(len(b) for b in batches)
    print(
        f"  {name:8} plain {entries / med['plain']:8,.0f} entries/s ({med['plain'] / len(batches) * 1000:.2f} ms a batch),"
        f" fenced {entries / med['fenced']:8,.0f} entries/s ({med['fenced'] / len(batches) * 1000:.2f} ms a batch)"
    )
    for k, label in (("fenced", "fenced/plain "), ("control", "control/plain")):
        print(
            f"  {name:8} {label} = {statistics.median(pairs[k]):.3f}x (median of {len(pairs[k])} batches),"
            f" {med[k] / med['plain']:.3f}x (median round totals)"
            + ("; goal <= 1.05x" if k == "fenced" else "  <- the noise floor: plain against plain")
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", type=int, default=50, help="batches of 100 entries per measurement")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument(
        "--pg-url", help="PostgreSQL server for the postgres row [default: $FLOWER_TEST_PG_URL or a throw-away cluster]"
    )
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))  # imported here, not at the top: tests load benchmark files by path
    from stores import synthetic_session

    session = synthetic_session(args.batches * BATCH, shape="small")
    batches = [session[i : i + BATCH] for i in range(0, len(session), BATCH)]
    print(f"{len(session):,} small entries in {len(batches)} batches of {BATCH}; median of {args.rounds} rounds")
    with tempfile.TemporaryDirectory(prefix="flower-bench-lease-") as tmp:
        bench("sqlite", lambda n: SqliteSessionStore(Path(tmp) / f"s{n}.db"), batches, args.rounds)
    url = args.pg_url or os.environ.get("FLOWER_TEST_PG_URL")
    cluster = None
    if not url:
        sys.path.insert(0, str(HERE.parent / "tests"))
        from pg_cluster import Cluster, ClusterError

        try:
            cluster = Cluster.start(durable=True)  # fsync on: commits cost what they cost in production
        except ClusterError as exc:
            print(f"  postgres skipped: {exc}")
            return
        url = cluster.url
    try:
        bench("postgres", lambda n: _fresh_pg_store(url, n), batches, args.rounds)
    finally:
        _drop_schemas(url, args.rounds)
        if cluster is not None:
            cluster.stop()


def _fresh_pg_store(url: str, n: int) -> Any:
    import psycopg

    from flower_stores import PostgresSessionStore

    schema = f"flower_bench_lease_{n}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    return PostgresSessionStore(url, schema=schema)


def _drop_schemas(url: str, n: int) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        for i in range(n):
            conn.execute(f'DROP SCHEMA IF EXISTS "flower_bench_lease_{i}" CASCADE')


if __name__ == "__main__":
    main()
