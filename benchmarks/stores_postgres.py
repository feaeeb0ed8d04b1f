"""The PostgreSQL rows of ``benchmarks/stores.py``: `PostgresSessionStore` against the SDK reference adapter's way.

The floor is written here the way the SDK's reference adapter (``examples/session_stores/
postgres_session_store.py`` in claude-agent-sdk-python) works: asyncpg, its table (``entry jsonb``,
``bigserial seq``, one row per entry), one ``INSERT … SELECT … FROM unnest($4::jsonb[])`` per batch, one
ordered ``SELECT`` for a load plus ``json.loads`` per row — and nothing else: no uuid idempotency, no meta, no
summaries, no per-key sequence. Ours does all of those (a lock, a uuid filter, a meta update and a summary
fold in the same transaction) and must still reach >= 0.8 of the floor's append throughput and raw-load speed.

The server: ``--pg-url`` or ``FLOWER_TEST_PG_URL``, else a throw-away cluster (``tests/pg_cluster.py``) with
fsync on, so commits cost what they cost in production. Both sides run on the same server, same session.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

__all__ = ["PostgresBench"]

ROOT = Path(__file__).resolve().parents[1]

_REF_TABLE = "claude_session_store"
_REF_DDL = f"""
DROP TABLE IF EXISTS {_REF_TABLE};
CREATE TABLE {_REF_TABLE} (
  project_key text   NOT NULL,
  session_id  text   NOT NULL,
  subpath     text   NOT NULL DEFAULT '',
  seq         bigserial,
  entry       jsonb  NOT NULL,
  mtime       bigint NOT NULL,
  PRIMARY KEY (project_key, session_id, subpath, seq)
);
CREATE INDEX {_REF_TABLE}_list_idx ON {_REF_TABLE} (project_key, session_id) WHERE subpath = '';
"""
_REF_INSERT = f"""
INSERT INTO {_REF_TABLE} (project_key, session_id, subpath, entry, mtime)
SELECT $1, $2, $3, e, (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::bigint
FROM unnest($4::jsonb[]) WITH ORDINALITY AS t(e, ord)
ORDER BY ord
"""
_REF_LOAD = f"SELECT entry FROM {_REF_TABLE} WHERE project_key = $1 AND session_id = $2 AND subpath = $3 ORDER BY seq"


class _ReferenceFloor:
    """The reference adapter's append and load on an asyncpg pool (its own event loop: asyncpg is asyncio-only)."""

    def __init__(self, url: str) -> None:
        import asyncpg

        self.runner = asyncio.Runner()

        async def make() -> Any:
            return await asyncpg.create_pool(url, min_size=1, max_size=4)

        self.pool = self.runner.run(make())

    def reset(self) -> None:
        self.runner.run(self.pool.execute(_REF_DDL))

    def append_all(self, key: Any, batches: list[list[dict[str, Any]]]) -> None:
        async def go() -> None:
            for batch in batches:
                await self.pool.execute(_REF_INSERT, key["project_key"], key["session_id"], "", [json.dumps(e) for e in batch])

        self.runner.run(go())

    def load(self, key: Any) -> list[Any]:
        async def go() -> list[Any]:
            rows = await self.pool.fetch(_REF_LOAD, key["project_key"], key["session_id"], "")
            return [json.loads(r["entry"]) for r in rows]

        return self.runner.run(go())

    def close(self) -> None:
        self.runner.run(self.pool.close())
        self.runner.close()


class PostgresBench:
    """Open with `start`; `append_rows` while the session is in memory, `load_rows` after; then `close`."""

    def __init__(self, url: str, cluster: Any | None) -> None:
        from flower_stores import PostgresSessionStore

        self.url = url
        self.cluster = cluster
        self.floor = _ReferenceFloor(url)
        self.store_type = PostgresSessionStore
        self.stores: list[Any] = []

    @classmethod
    def start(cls, url: str | None) -> PostgresBench | str:
        """The bench, or why the PostgreSQL rows are skipped."""
        try:
            import asyncpg  # noqa: F401 - the floor's driver
            import psycopg  # noqa: F401 - ours
        except ImportError as exc:
            return f"{exc.name} is not installed (hatch's env has both)"
        cluster = None
        url = url or os.environ.get("FLOWER_TEST_PG_URL")
        if not url:
            sys.path.insert(0, str(ROOT / "tests"))
            from pg_cluster import Cluster, ClusterError

            try:
                cluster = Cluster.start(durable=True)
            except ClusterError as exc:
                return str(exc)
            url = cluster.url
        return cls(url, cluster)

    def _fresh_store(self, n: int) -> Any:
        import psycopg

        schema = f"flower_bench_{n}"
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        store = self.store_type(self.url, schema=schema)
        self.stores.append(store)
        return store

    def append_rows(self, batches: list[list[dict[str, Any]]], key: Any, rounds: int, timed: Callable[[Callable[[], Any]], float]) -> None:
        n = sum(len(b) for b in batches)
        ours_t, floor_t = [], []
        for r in range(rounds):  # interleaved, so a busy moment on the machine hits both sides alike
            store = self._fresh_store(r)

            async def append_all(store: Any = store) -> None:
                for batch in batches:
                    await store.append(key, batch)

            ours_t.append(timed(lambda: anyio.run(append_all)))
            self.floor.reset()
            floor_t.append(timed(lambda: self.floor.append_all(key, batches)))
        ours, floor = statistics.median(ours_t), statistics.median(floor_t)
        print(f"\nPostgreSQL append (batches of {len(batches[0])}, one transaction each; server {self._where()})")
        print(f"  PostgresSessionStore.append           {n / ours:10,.0f} entries/s")
        print(f"  floor (reference adapter's way)       {n / floor:10,.0f} entries/s   ours = {floor / ours:.2f} of floor (goal >= 0.8)")

    def load_rows(self, key: Any, rounds: int, workspace: Path, timed: Callable[[Callable[[], Any]], float]) -> None:
        from flower_stores import EphemeralPolicy, PrunePolicy, PruningSessionStore, TrimPolicy

        store = self.stores[0]
        layered = PruningSessionStore(store, workspace, policy=TrimPolicy(), ephemeral=EphemeralPolicy(), prune=PrunePolicy())

        async def load(s: Any) -> Any:
            return await s.load(key)

        assert anyio.run(load, store) == self.floor.load(key), "ours and the floor must load the same transcript"
        timed(lambda: anyio.run(load, layered))  # the spill files exist from here on: warm loads only
        raw_t, layered_t, floor_t = [], [], []
        for _ in range(rounds):
            raw_t.append(timed(lambda: anyio.run(load, store)))
            layered_t.append(timed(lambda: anyio.run(load, layered)))
            floor_t.append(timed(lambda: self.floor.load(key)))
        raw, lay, floor = statistics.median(raw_t), statistics.median(layered_t), statistics.median(floor_t)
        print("\nPostgreSQL load of the same session")
        print(f"  raw     PostgresSessionStore.load          {raw * 1000:8.0f} ms")
        print(f"  floor   reference adapter's way           {floor * 1000:8.0f} ms   ours = {floor / raw:.2f} of floor's speed (goal >= 0.8)")
        print(f"  layered PruningSessionStore.load (warm)   {lay * 1000:8.0f} ms   = {lay / raw:.2f}x raw")

    def _where(self) -> str:
        from flower_stores import describe_store_url

        kind = "throw-away cluster, fsync on" if self.cluster is not None else "given URL"
        return f"{describe_store_url(self.url)}, {kind}"

    def close(self) -> None:
        import psycopg

        for store in self.stores:
            store.close()
        self.floor.close()
        with psycopg.connect(self.url, autocommit=True) as conn:
            for store in self.stores:
                conn.execute(f'DROP SCHEMA IF EXISTS "{store.schema}" CASCADE')
            conn.execute(f"DROP TABLE IF EXISTS {_REF_TABLE}")
        if self.cluster is not None:
            self.cluster.stop()
