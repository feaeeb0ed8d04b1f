"""`PostgresSessionStore`: the SDK's SessionStore protocol on a PostgreSQL server that a fleet of machines shares.

Same guarantees as `SqliteSessionStore`, on a server many machines reach: uuid idempotency (a replayed batch
adds nothing and changes no mtime), contiguous ``seq`` per key under any number of concurrent writers,
summaries folded with the SDK's ``fold_session_summary`` in the append's own transaction, cascade delete.

Driver — psycopg 3, synchronous, with ``psycopg_pool``, every call in an anyio worker thread. Measured against
asyncpg with the same statements on a 10,000-entry, 24 MB session (batches of 100, loopback server, lz4, median
of 3; scratch script, the store's own numbers are in benchmarks/stores.py):

- append: psycopg 937 ms, asyncpg 994 ms — equal, once arrays go in binary format (``%b``; psycopg's *text*
  array dumper escapes every quote of every JSON payload in Python: 3.5 s for the same run);
- raw load (fetch + ``json.loads`` per row): psycopg 272-292 ms, asyncpg 181 ms — libpq reads 24 MB slower;
- but asyncpg (like psycopg's async mode) runs on asyncio only and binds its pool to one event loop, while
  flower's libraries must work under trio too and the CLI calls ``anyio.run`` several times on one store. A
  synchronous pool in worker threads works under asyncio, trio and plain threads alike, and serves flower's
  synchronous helpers (``projects()``, ``has_session()``, ``last_context()``) without a second code path. The
  load is still ~1.5x faster than the SDK reference adapter's (asyncpg on ``jsonb``): text + lz4 beat jsonb.

The pool and the schema are `PostgresConnection` (``_postgres_connection``), the lease and run-record
primitives `PostgresRecords` (``_postgres_records``), the SQL `Statements` (``_postgres_statements``); this
class is the SDK protocol and flower's queries on them.

Concurrency design (why it is safe for many processes on many machines):

- every append is one transaction; its first statement upserts the key's ``meta`` row
  (``INSERT … ON CONFLICT DO UPDATE``), which takes that row's lock: appenders to one key queue there, appenders
  to different keys do not wait for each other;
- in READ COMMITTED each later statement takes a fresh snapshot, so the statements after the lock see every
  entry the previous holder committed: the uuid filter cannot miss a concurrent writer's rows, ``next_seq`` is
  the latest, and the summary read-fold-write cannot lose an update;
- appends also hold a *shared* advisory lock on their session, and deleting a main transcript takes it
  *exclusively*, so a cascade delete never interleaves with an append to one of the session's subkeys;
- ``mtime`` is the server's clock (``clock_timestamp()``), kept strictly increasing per key — machines'
  clocks may disagree, the server's is the one they share;
- the statements of one append travel in psycopg's pipeline mode: two round trips per batch (lock + insert +
  meta update [+ summary read], then the summary write + COMMIT), whatever the batch size.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import anyio.to_thread

from .._shared.json_text import dumps
from ..lease import Lease, fence_error
from ._keys import prefix_range, store_key
from ._payloads import context_tokens
from ._postgres_events import PostgresEvents
from ._postgres_records import PostgresRecords
from ._postgres_statements import LOCK_SPACE, lease_and_now
from ._summary import fold_summary

if TYPE_CHECKING:
    import psycopg
    from claude_agent_sdk import (
        SessionKey,
        SessionListSubkeysKey,
        SessionStoreEntry,
        SessionStoreListEntry,
        SessionSummaryEntry,
    )

__all__ = ["PostgresSessionStore"]


def _uid_key(uid: str) -> str:
    """The ``uid`` column value: the uuid itself, or — if PostgreSQL ``text`` cannot hold it — its JSON form.

    ``text`` takes neither a lone surrogate (not encodable UTF-8) nor NUL, yet both are valid in a JSON string
    the SDK may hand over. Such a uuid is stored as its ASCII-escaped JSON literal, which starts with ``"``;
    so that no plain uuid can equal it, a uuid that itself starts with ``"`` is stored that way too. The map
    is one-to-one, so idempotency holds for every uuid.
    """
    if not uid.startswith('"') and "\0" not in uid:
        if uid.isascii():
            return uid  # the common case, checked first: a real uuid
        try:
            uid.encode("utf-8")
            return uid
        except UnicodeEncodeError:
            pass
    return json.dumps(uid, ensure_ascii=True)


class PostgresSessionStore(PostgresRecords, PostgresEvents):
    """A `claude_agent_sdk.SessionStore` on PostgreSQL (``pip install 'flower-stores[postgres]'``).

    ``PostgresSessionStore(url, schema="flower", max_size=4)``: ``url`` is a libpq connection string
    (``postgresql://user:password@host:5432/db`` or ``host=… dbname=…``); the tables live in ``schema``, which
    is created (with its tables) on first use and records a schema version so later releases can migrate it.
    Opening connects once, so a wrong URL, a refused connection or a missing driver is a `StoreError` right
    away, with a one-line message that says what to fix.

    Implements the whole protocol, the `SessionIndex` questions (``has_session()``, ``has_entry()``,
    ``last_context()``, ``counts()``, ``where``) plus ``projects()``, the session lease (`SessionLeases`) and
    runs' manifest rows and lineage (`RunRecords`), and runs' published events and inboxes (`RunEventLog`,
    `RunInbox`). Close it with ``close()`` or a ``with`` block.

    ``read_only=True`` opens an existing store for inspection (``flower sessions``): no schema is created or
    migrated (a URL or schema with no store is a `StoreError`), every connection is read-only on the server
    too, and ``append``/``delete`` raise `StoreError`.
    """

    def __repr__(self) -> str:
        return f"PostgresSessionStore({self.where!r}, schema={self.schema!r})"

    # --- SessionStore protocol ----------------------------------------------------------------------

    async def append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        """Persist a batch. Entries whose ``uuid`` is already stored under ``key`` are skipped (SDK retries)."""
        if not entries:
            return
        await anyio.to_thread.run_sync(self.append_sync, key, entries)

    def append_sync(self, key: SessionKey, entries: Sequence[SessionStoreEntry]) -> None:
        """`append` without the worker thread, for synchronous callers (and benchmarks)."""
        self._append_sync(key, entries, None)

    def _append_sync(self, key: SessionKey, entries: Sequence[SessionStoreEntry], lease: Lease | None) -> None:
        """The append's one transaction; with ``lease``, fenced by it (`append_fenced`)."""
        self._check_writable()
        k = store_key(key)
        uids: list[str | None] = []
        payloads: list[str] = []
        kept: list[SessionStoreEntry] = []
        seen: set[str] = set()
        for entry in entries:
            # Anything the SDK hands over is stored, whatever its content: a line that is not an object has no
            # uuid (never deduplicated) and is left out of the summary fold, which reads objects only.
            raw_uid = entry.get("uuid") if type(entry) is dict else None
            uid = _uid_key(raw_uid) if type(raw_uid) is str else None
            if uid is not None:
                if uid in seen:
                    continue
                seen.add(uid)
            uids.append(uid)
            payloads.append(dumps(entry))
            kept.append(entry)
        main = key.get("subpath") is None
        session = k if main else store_key({"project_key": key["project_key"], "session_id": key["session_id"]})
        self._run(lambda conn: self._append(conn, key, k, session, main, uids, payloads, kept, lease))

    def _append(
        self,
        conn: psycopg.Connection[Any],
        key: SessionKey,
        k: str,
        session: str,
        main: bool,
        uids: list[str | None],
        payloads: list[str],
        kept: list[SessionStoreEntry],
        lease: Lease | None,
    ) -> None:
        sql = self._sql
        with conn.pipeline() as pipeline, conn.transaction() as tx:
            conn.execute(sql.session_lock_shared, (LOCK_SPACE, session))
            conn.execute(sql.lock_key, (k,))
            params: dict[str, Any] = {"k": k, "uids": uids, "payloads": payloads}
            if lease is None:
                inserted = conn.execute(sql.insert, params)
            else:
                # The fence, folded into the insert (no statement or round trip of its own): that statement's
                # snapshot is taken after the shared session lock was granted, while a lease change holds the
                # same lock exclusively. So no takeover commits between the check and this transaction's
                # commit, and any takeover committed before it is seen. A stale epoch inserts nothing and
                # returns no row: refused below, rolling the whole transaction back.
                params.update(project=key["project_key"], session_id=key["session_id"], epoch=lease.epoch)
                inserted = conn.execute(sql.insert_fenced, params)
            summary = conn.execute(sql.summary, (key["project_key"], key["session_id"])) if main else None
            pipeline.sync()
            result = inserted.fetchone()
            if result is None and lease is not None:
                # Refused: the message names who took over (read now, still under the lock); raising rolls the
                # whole transaction back, so nothing of the batch is written.
                found = conn.execute(sql.lease_row_now, (key["project_key"], key["session_id"])).fetchone()
                raise fence_error(lease, *lease_and_now(found))
            count, mtime, new_uids = result or (0, 0, None)
            if not count:
                # A replayed batch: nothing new, so no new mtime (the meta update rolls back) and no fold.
                raise self._psycopg.Rollback(tx)
            if summary is not None:
                if count == len(kept):
                    new = kept
                else:
                    stored_now = set(new_uids or ())
                    new = [e for e, uid in zip(kept, uids) if uid is None or uid in stored_now]
                new = [e for e in new if type(e) is dict]
                row = summary.fetchone()
                prev: SessionSummaryEntry | None = (
                    {"session_id": key["session_id"], "mtime": row[0], "data": json.loads(row[1])} if row else None
                )
                folded = fold_summary(prev, key, new)
                conn.execute(sql.write_summary, (key["project_key"], key["session_id"], mtime, dumps(folded["data"])))

    async def load(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        """Every entry of ``key`` in append order, or ``None`` if nothing was ever stored under it."""
        return await anyio.to_thread.run_sync(self.load_sync, key)

    def load_sync(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        """`load` without the worker thread, for synchronous callers (and benchmarks)."""
        k = store_key(key)
        rows = self._run(lambda conn: conn.execute(self._sql.load, (k,)).fetchall())
        if not rows:
            return None
        # Row by row, not one json.loads of a joined array: a single 20 MB parse is one C call that holds the
        # GIL throughout, and would freeze the event loop this load runs beside for its whole duration.
        loads = json.loads
        return [loads(r[0]) for r in rows]

    async def list_sessions(self, project_key: str) -> list[SessionStoreListEntry]:
        return await anyio.to_thread.run_sync(self._list_sessions, project_key)

    def _list_sessions(self, project_key: str) -> list[SessionStoreListEntry]:
        low, high = prefix_range(project_key + "/")
        rows = self._run(lambda conn: conn.execute(self._sql.keys_in_range, (low, high)).fetchall())
        out: list[SessionStoreListEntry] = []
        for k, mtime in rows:
            rest = k[len(low) :]
            if rest and "/" not in rest:  # main transcripts only
                out.append({"session_id": rest, "mtime": mtime})
        return out

    async def list_session_summaries(self, project_key: str) -> list[SessionSummaryEntry]:
        return await anyio.to_thread.run_sync(self._list_session_summaries, project_key)

    def _list_session_summaries(self, project_key: str) -> list[SessionSummaryEntry]:
        rows = self._run(lambda conn: conn.execute(self._sql.summaries, (project_key,)).fetchall())
        return [{"session_id": sid, "mtime": mtime, "data": json.loads(data)} for sid, mtime, data in rows]

    async def delete(self, key: SessionKey) -> None:
        """Delete a transcript; deleting a main transcript also deletes its subagent transcripts and summary."""
        await anyio.to_thread.run_sync(self._delete, key)

    def _delete(self, key: SessionKey) -> None:
        self._check_writable()
        k = store_key(key)
        sql = self._sql

        def work(conn: psycopg.Connection[Any]) -> None:
            with conn.pipeline(), conn.transaction():
                if key.get("subpath") is None:
                    low, high = prefix_range(k + "/")
                    # Exclusive: no append to this session (any subkey) runs while its tree goes.
                    conn.execute(sql.session_lock, (LOCK_SPACE, k))
                    conn.execute(sql.delete_tree_meta, (k, low, high))
                    conn.execute(sql.delete_tree_entries, (k, low, high))
                    conn.execute(sql.delete_summary, (key["project_key"], key["session_id"]))
                else:
                    # The meta row first: its lock waits for an append in flight, then the entries go.
                    conn.execute(sql.delete_meta, (k,))
                    conn.execute(sql.delete_entries, (k,))

        self._run(work)

    async def list_subkeys(self, key: SessionListSubkeysKey) -> list[str]:
        return await anyio.to_thread.run_sync(self._list_subkeys, key)

    def _list_subkeys(self, key: SessionListSubkeysKey) -> list[str]:
        low, high = prefix_range(store_key(key) + "/")
        rows = self._run(lambda conn: conn.execute(self._sql.keys_in_range_sorted, (low, high)).fetchall())
        return [k[len(low) :] for (k,) in rows]

    # --- flower's synchronous helpers (short queries; safe to call from a coroutine, as with SQLite) -

    def projects(self) -> list[str]:
        """Every project key with at least one stored transcript, sorted."""
        rows = self._run(lambda conn: conn.execute(self._sql.projects).fetchall())
        return [r[0] for r in rows if r[0]]

    def has_session(self, project_key: str, session_id: str) -> bool:
        """Whether the main transcript exists (reads ``meta`` only, never a payload)."""
        k = store_key({"project_key": project_key, "session_id": session_id})
        return self._run(lambda conn: conn.execute(self._sql.has_key, (k,)).fetchone()) is not None

    def counts(self, project_key: str | None = None) -> tuple[int, int]:
        """``(transcripts, entries)`` in the store (or in one project), from ``meta`` alone (``flower doctor``; no
        table scan). Transcripts count every key, subagent transcripts included."""
        if project_key is None:
            row = self._run(lambda conn: conn.execute(self._sql.counts).fetchone())
        else:
            bounds = prefix_range(project_key + "/")
            row = self._run(lambda conn: conn.execute(self._sql.counts_in_range, bounds).fetchone())
        return (int(row[0]), int(row[1])) if row else (0, 0)

    def has_entry(self, project_key: str, session_id: str, uuid: str) -> bool:
        """Whether the main transcript holds an entry with this ``uuid`` (one index lookup, no payload read)."""
        k = store_key({"project_key": project_key, "session_id": session_id})
        return self._run(lambda conn: conn.execute(self._sql.has_entry, (k, _uid_key(uuid))).fetchone()) is not None

    def last_context(self, project_key: str, session_id: str, scan: int = 60) -> int:
        """Context size of the latest model call: input + cache-read + cache-creation tokens, or 0.

        Reads at most the last ``scan`` entries, newest first, and returns the first non-zero sum.
        """
        k = store_key({"project_key": project_key, "session_id": session_id})
        rows = self._run(lambda conn: conn.execute(self._sql.newest, (k, max(0, int(scan)))).fetchall())
        return context_tokens(r[0] for r in rows)
