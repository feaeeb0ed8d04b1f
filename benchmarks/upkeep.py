"""flower-stores benchmark: what store upkeep gives back — sizes before and after a prune and a compaction.

    hatch run python benchmarks/upkeep.py [--sessions 24] [--entries 400] [--keep 6] [--pg-url URL]

A store of ``--sessions`` Claude-Code-shaped sessions (`stores.synthetic_session`, "big" entries: tool outputs of
kilobytes) is written, the oldest all but ``--keep`` are deleted (`StoreUpkeep.plan_prune` + ``apply``), and the
store is compacted. Printed per backend: its size when full, after the deletions (a delete frees pages inside
the file; the file keeps its size), after compaction, the ratio compacted/full against the ratio of transcript
bytes kept, and the seconds each phase took.

- ``sqlite``: ``VACUUM`` + ``wal_checkpoint(TRUNCATE)`` (the one kind SQLite has);
- ``postgres``: ``VACUUM (ANALYZE)`` first (space reusable, files barely shrink), then ``VACUUM FULL`` (tables
  rewritten). The server: ``--pg-url``, ``FLOWER_TEST_PG_URL``, or a throw-away cluster with fsync on
  (``tests/pg_cluster.py``), as ``stores.py`` does; without one the row is skipped with the reason.

Sizes are the store's own measure (`StoreUpkeep.size`): the SQLite file with its WAL and shared-memory files; the
PostgreSQL schema's tables with their indexes and TOAST. The ratios are the result.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

from flower_stores import SqliteSessionStore, StoreUpkeep

HERE = Path(__file__).resolve().parent
PROJECT = "-home-dev-project"
BATCH = 100
SCHEMA = "flower_bench_upkeep"


def _mb(n: int) -> str:
    return f"{n / (1 << 20):7.2f} MB"


def _fill(store: Any, sessions: int, entries: int) -> None:
    """``sessions`` sessions of ``entries`` entries each, written oldest first (so a prune takes the first ones)."""
    from stores import synthetic_session

    async def write() -> None:
        for n in range(sessions):
            key = {"project_key": PROJECT, "session_id": f"00000000-0000-4000-8000-{n:012d}"}
            session = synthetic_session(entries, seed=n + 1, shape="big")
            for i in range(0, len(session), BATCH):
                await store.append(key, session[i : i + BATCH])
            await anyio.sleep(0.002)  # the storage clock is in ms: each session is written at a later ms

    anyio.run(write)


def _timed(call: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    out = call()
    return out, time.perf_counter() - start


def bench(name: str, store: Any, sessions: int, entries: int, keep: int) -> None:
    upkeep = StoreUpkeep(store)
    _fill(store, sessions, entries)
    full = upkeep.size()
    stored = anyio.run(lambda: upkeep.plan_prune(0))
    total_bytes = sum(s.payload_bytes for s in stored.delete)
    cutoff = sorted(s.mtime_ms for s in stored.delete)[sessions - keep - 1]
    now_s = time.time()
    older_than = now_s - (cutoff + 1) / 1000  # everything written up to the cutoff session is older than this

    async def prune() -> Any:
        plan = await StoreUpkeep(store, clock=lambda: now_s).plan_prune(older_than)
        return plan, await upkeep.apply(plan)

    (plan, done), prune_s = _timed(lambda: anyio.run(prune))
    deleted = upkeep.size()
    kept_share = 1 - plan.payload_bytes / total_bytes
    print(
        f"{name:<10} {sessions} sessions, {_mb(full.total_bytes)} full; pruned {len(done.deleted)} "
        f"({_mb(plan.payload_bytes)} of transcripts, {prune_s:.2f} s): {_mb(deleted.total_bytes)}"
    )
    kinds = [("VACUUM", False)] if isinstance(store, SqliteSessionStore) else [("VACUUM", False), ("VACUUM FULL", True)]
    for label, full_kind in kinds:
        (sizes, compact_s) = _timed(lambda f=full_kind: anyio.run(lambda: upkeep.compact(full=f)))
        after = sizes[1]
        print(
            f"{'':<10} {label:<12} {compact_s:6.2f} s -> {_mb(after.total_bytes)}: "
            f"{after.total_bytes / full.total_bytes:.3f} of the full store (transcript bytes kept: {kept_share:.3f})"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=24)
    parser.add_argument("--entries", type=int, default=400, help="entries per session")
    parser.add_argument("--keep", type=int, default=6, help="newest sessions the prune keeps")
    parser.add_argument(
        "--pg-url", help="PostgreSQL server for the postgres row [default: $FLOWER_TEST_PG_URL or a throw-away cluster]"
    )
    args = parser.parse_args()
    if not 0 < args.keep < args.sessions:
        parser.error("--keep must be between 1 and --sessions - 1")
    sys.path.insert(0, str(HERE))  # imported here, not at the top: tests load benchmark files by path
    with tempfile.TemporaryDirectory(prefix="flower-bench-upkeep-") as tmp:
        with SqliteSessionStore(Path(tmp) / "sessions.db") as store:
            bench("sqlite", store, args.sessions, args.entries, args.keep)
    url = args.pg_url or os.environ.get("FLOWER_TEST_PG_URL")
    cluster = None
    if not url:
        sys.path.insert(0, str(HERE.parent / "tests"))
        from pg_cluster import Cluster, ClusterError

        try:
            cluster = Cluster.start(durable=True)  # fsync on: what a server in production does
        except ClusterError as exc:
            print(f"postgres   skipped: {exc}")
            return
        url = cluster.url
    try:
        _drop_schema(url)
        from flower_stores import PostgresSessionStore

        with PostgresSessionStore(url, schema=SCHEMA) as store:
            bench("postgres", store, args.sessions, args.entries, args.keep)
    finally:
        _drop_schema(url)
        if cluster is not None:
            cluster.stop()


def _drop_schema(url: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{SCHEMA}" CASCADE')


if __name__ == "__main__":
    main()
