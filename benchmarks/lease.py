"""flower-stores benchmark: what fencing costs an append — ratios from one run.

    hatch run python benchmarks/lease.py [--batches 50] [--rounds 9] [--pg-url URL]

A fenced append (``store.fenced(lease).append``: the lease's epoch read and compared inside the append's write
transaction) against a plain ``store.append`` of the same batches — 100 small entries each (a few hundred
bytes, the shape where per-batch overheads show most), each batch one transaction. Goal: fenced <= 1.05x plain.

- ``sqlite``: `SqliteSessionStore` (the check is one indexed SELECT under the ``BEGIN IMMEDIATE`` lock);
- ``postgres``: `PostgresSessionStore` (the epoch is checked inside the append's insert statement, which runs
  after the session's shared advisory lock: no statement or round trip of its own). The server:
  ``--pg-url``, ``FLOWER_TEST_PG_URL``, or a throw-away cluster with fsync on (``tests/pg_cluster.py``), as
  ``stores.py`` does; without one the row is skipped with the reason.

Each round opens three fresh stores and appends every batch three times, back to back, in a rotating order:
plainly to the first, fenced to the second, and plainly to the third — the control, whose ratio to the first
is this run's noise floor. The three use the same session key, one store each, so their entries lie alike in
the storage's indexes: sessions sharing one store would differ by where their keys sort (on PostgreSQL the
session whose key sorts last appends at the index's rightmost leaf, measurably cheaper — that, not the
fence, made most of an earlier 1.10x). Shown: the median of the per-batch ratios (steadiest on a shared
machine) and the ratio of the rounds' median totals. Absolute times vary from machine to machine; the ratios
are the result.
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


ROLES = ("plain", "fenced", "control")


def _round(stores: dict[str, Any], batches: list[list[dict[str, Any]]], shift: int) -> dict[str, list[float]]:
    """Seconds of each append of one round, batch by batch: plain, fenced, and plain again (the control).

    Each goes to its own fresh store (``stores[role]``), to the same session key, so the three grow alike:
    batch i goes to each, back to back, in an order that rotates from batch to batch, so the machine's drift
    falls on all three. The control is a plain append measured exactly like the fenced one: its ratio to the
    plain one is the noise floor of this run.
    """

    async def run() -> dict[str, list[float]]:
        owner = LeaseOwner.this_process("bench")
        fenced = stores["fenced"]
        view = fenced.fenced(await fenced.acquire_lease(KEY["project_key"], KEY["session_id"], owner))
        targets = {"plain": stores["plain"], "fenced": view, "control": stores["control"]}
        times: dict[str, list[float]] = {name: [] for name in ROLES}
        names = list(ROLES)
        gc.collect()
        for i, batch in enumerate(batches):
            k = (i + shift) % 3
            for name in names[k:] + names[:k]:
                start = time.perf_counter()
                await targets[name].append(KEY, batch)
                times[name].append(time.perf_counter() - start)
        return times

    return anyio.run(run)


def bench(name: str, open_store: Callable[[int, str], Any], batches: list[list[dict[str, Any]]], rounds: int) -> None:
    totals: dict[str, list[float]] = {"plain": [], "fenced": [], "control": []}  # per round
    pairs: dict[str, list[float]] = {"fenced": [], "control": []}  # x/plain of each batch
    for r in range(rounds):
        stores = {role: open_store(r, role) for role in ROLES}
        try:
            times = _round(stores, batches, shift=r)
        finally:
            for store in stores.values():
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
        bench("sqlite", lambda n, role: SqliteSessionStore(Path(tmp) / f"s{n}-{role}.db"), batches, args.rounds)
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
        bench("postgres", lambda n, role: _fresh_pg_store(url, n, role), batches, args.rounds)
    finally:
        _drop_schemas(url, args.rounds)
        if cluster is not None:
            cluster.stop()


def _fresh_pg_store(url: str, n: int, role: str) -> Any:
    import psycopg

    from flower_stores import PostgresSessionStore

    schema = f"flower_bench_lease_{n}_{role}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    return PostgresSessionStore(url, schema=schema)


def _drop_schemas(url: str, n: int) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        for i in range(n):
            for role in ROLES:
                conn.execute(f'DROP SCHEMA IF EXISTS "flower_bench_lease_{i}_{role}" CASCADE')


if __name__ == "__main__":
    main()
