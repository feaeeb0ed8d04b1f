"""The PostgreSQL rows of ``benchmarks/stores.py``'s ``BACKENDS``: ours, and a floor the way the SDK reference adapter works.

The floor is written here the way the SDK's reference adapter (``examples/session_stores/
postgres_session_store.py`` in claude-agent-sdk-python) works: asyncpg, its table (``entry jsonb``,
``bigserial seq``, one row per entry), one ``INSERT … SELECT … FROM unnest($4::jsonb[])`` per batch, one
ordered ``SELECT`` for a load plus ``json.loads`` per row — and nothing else: no uuid idempotency, no meta, no
summaries, no per-key sequence. Ours does all of those (a lock, a uuid filter, a meta update and a summary
fold in the same transaction) and must still reach >= 0.8 of the floor's append throughput and raw-load speed.

Two rows:

- ``postgres``: `PostgresSessionStore` through the async protocol (``await store.append``/``load``: a worker
  thread hop per call, as an app pays it), its floor the reference way called *directly* on the adapter's own
  event loop — no thread hop, so the floor is as fast as it gets;
- ``pg-floor``: the reference way as a store of its own, so the layers can run over it too (its layered load
  goes through an async adapter: one thread hop into the asyncpg loop, as with ours).

The server: ``--pg-url`` or ``FLOWER_TEST_PG_URL``, else a throw-away cluster (``tests/pg_cluster.py``) with
fsync on, so commits cost what they cost in production. Every row runs on the same server, same session.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio.to_thread

__all__ = ["PostgresRows"]

ROOT = Path(__file__).resolve().parents[1]
FLOOR_LABEL = "reference adapter's way: asyncpg, jsonb, INSERT … unnest per batch, one ordered SELECT"

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

Batches = list[list[dict[str, Any]]]


class ReferenceFloor:
    """The reference adapter's append and load on an asyncpg pool, on its own event loop (asyncpg is
    asyncio-only and binds its pool to one loop). The ``*_sync`` methods run it directly from the caller's
    thread; ``append``/``load`` are the SDK protocol, for the layers."""

    def __init__(self, url: str) -> None:
        import asyncpg

        self.runner = asyncio.Runner()
        self._one_at_a_time = threading.Lock()  # one Runner, driven from whichever thread calls

        async def make() -> Any:
            return await asyncpg.create_pool(url, min_size=1, max_size=4)

        self.pool = self.runner.run(make())

    def _run(self, coro: Any) -> Any:
        with self._one_at_a_time:
            return self.runner.run(coro)

    def reset(self) -> ReferenceFloor:
        self._run(self.pool.execute(_REF_DDL))
        return self

    def append_all_sync(self, key: Any, batches: Batches) -> None:
        async def go() -> None:
            for batch in batches:
                await self.pool.execute(
                    _REF_INSERT, key["project_key"], key["session_id"], "", [json.dumps(e) for e in batch]
                )

        self._run(go())

    def load_sync(self, key: Any) -> list[Any] | None:
        async def go() -> list[Any]:
            rows = await self.pool.fetch(_REF_LOAD, key["project_key"], key["session_id"], key.get("subpath") or "")
            return [json.loads(r["entry"]) for r in rows]

        return self._run(go()) or None

    async def append(self, key: Any, entries: list[dict[str, Any]]) -> None:
        await anyio.to_thread.run_sync(self.append_all_sync, key, [entries])

    async def load(self, key: Any) -> list[Any] | None:
        return await anyio.to_thread.run_sync(self.load_sync, key)

    def close(self) -> None:
        self._run(self.pool.close())
        self.runner.close()


class PostgresRows:
    """Open with `start`; `backends` gives the rows for ``BACKENDS``; `close` drops everything it made."""

    def __init__(self, url: str, cluster: Any | None) -> None:
        self.url = url
        self.cluster = cluster
        self.floor = ReferenceFloor(url)
        self.stores: list[Any] = []
        self._schemas = itertools.count()

    @classmethod
    def start(cls, url: str | None) -> PostgresRows | str:
        """The rows, or why they are skipped."""
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

    def where(self) -> str:
        from flower_stores import describe_store_url

        kind = "throw-away cluster, fsync on" if self.cluster is not None else "given URL"
        return f"{describe_store_url(self.url)}, {kind}"

    def _fresh_store(self, _tmp: Path) -> Any:
        import psycopg

        from flower_stores import PostgresSessionStore

        schema = f"flower_bench_{next(self._schemas)}"
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        store = PostgresSessionStore(self.url, schema=schema)
        self.stores.append(store)
        return store

    def _floor_append(self, key: Any, timed: Callable[[Callable[[], Any]], float]) -> Callable[[Path, Batches], float]:
        def floor(_tmp: Path, batches: Batches) -> float:
            self.floor.reset()
            return timed(lambda: self.floor.append_all_sync(key, batches))

        return floor

    def _floor_load(self, key: Any) -> Callable[[Batches], Callable[[], Any]]:
        def prepare(batches: Batches) -> Callable[[], Any]:
            self.floor.reset().append_all_sync(key, batches)
            return lambda: self.floor.load_sync(key)

        return prepare

    def backends(self, backend: Any, key: Any, timed: Callable[[Callable[[], Any]], float]) -> list[Any]:
        """The two rows, as ``backend`` (stores.Backend) tuples; ``timed`` is the benchmark's clock."""

        def drop(store: Any) -> None:
            store.close()

        return [
            backend(
                "postgres",
                self._fresh_store,
                self._floor_append(key, timed),
                drop,
                floor_label=FLOOR_LABEL,
                goal=0.8,
                load_floor=self._floor_load(key),
            ),
            backend(
                "pg-floor",
                lambda _tmp: self.floor.reset(),
                None,
                lambda _store: None,
                append_all=lambda store, batches: store.append_all_sync(key, batches),
                load_raw=lambda store: store.load_sync(key),
            ),
        ]

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
