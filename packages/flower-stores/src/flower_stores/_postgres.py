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
import re
import threading
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

import anyio.to_thread

from ._common import StoreError, context_tokens, dumps, fold_summary, prefix_range, store_key
from ._lease import Decision, Lease, LeaseRow, fence_error
from ._leasing import LeaseMethods
from ._runs import EncodedRow, RunRecordMethods

if TYPE_CHECKING:
    import psycopg
    from claude_agent_sdk import (
        SessionKey,
        SessionListSubkeysKey,
        SessionStoreEntry,
        SessionStoreListEntry,
        SessionSummaryEntry,
    )
    from psycopg_pool import ConnectionPool

__all__ = ["EXTRA_HINT", "SCHEMA_VERSION", "PostgresSessionStore", "describe_conninfo"]

EXTRA_HINT = "pip install 'flower-stores[postgres]'"
SCHEMA_VERSION = 3
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")
# Namespace of the advisory locks (the first key of the two-int form): "flwr" in ASCII.
_LOCK_SPACE = 0x666C7772

T = TypeVar("T")


def _schema_steps(s: str) -> dict[int, list[str]]:
    """DDL per schema version; opening a store applies the steps above the version its database records.

    Key columns are ``COLLATE "C"``: listing and cascade delete select a key's subkeys with an index range
    (see `prefix_range`), which needs code-point order whatever the database's default collation is.
    Payloads are ``text``: the JSON the SDK handed us, byte for byte (key order kept; ``jsonb`` would reorder
    keys and cost a parse on every insert and a rendering on every load), TOAST-compressed with lz4 when the
    server has it.
    """
    return {
        1: [
            f"""CREATE TABLE IF NOT EXISTS {s}.entries (
                store_key text COLLATE "C" NOT NULL,
                seq       bigint NOT NULL,
                uid       text COLLATE "C",
                payload   text NOT NULL,
                PRIMARY KEY (store_key, seq))""",
            f"CREATE UNIQUE INDEX IF NOT EXISTS entries_uid ON {s}.entries (store_key, uid) WHERE uid IS NOT NULL",
            # Most payloads pass the 2 kB TOAST threshold, so every append compresses and every load inflates.
            # lz4 (PostgreSQL 14+, when built with it) does both several times faster than the default pglz:
            # measured on a 10,000-entry session, appends 1.2-1.5x and loads ~1.2x faster.
            f"""DO $$ BEGIN
                IF EXISTS (SELECT 1 FROM pg_settings WHERE name = 'default_toast_compression' AND 'lz4' = ANY(enumvals)) THEN
                    EXECUTE 'ALTER TABLE {s}.entries ALTER COLUMN payload SET COMPRESSION lz4';
                END IF;
            END $$""",
            f"""CREATE TABLE IF NOT EXISTS {s}.meta (
                store_key text COLLATE "C" PRIMARY KEY,
                mtime     bigint NOT NULL,
                next_seq  bigint NOT NULL)""",
            f"""CREATE TABLE IF NOT EXISTS {s}.summaries (
                project_key text COLLATE "C" NOT NULL,
                session_id  text COLLATE "C" NOT NULL,
                mtime       bigint NOT NULL,
                data        text NOT NULL,
                PRIMARY KEY (project_key, session_id))""",
        ],
        # The session lease (one driver per session). Times are epoch ms on the server's clock, like mtime.
        2: [
            f"""CREATE TABLE IF NOT EXISTS {s}.leases (
                project_key text COLLATE "C" NOT NULL,
                session_id  text COLLATE "C" NOT NULL,
                epoch       bigint NOT NULL,
                host        text NOT NULL,
                pid         bigint NOT NULL,
                run_id      text NOT NULL,
                acquired_at bigint NOT NULL,
                renewed_at  bigint NOT NULL,
                expires_at  bigint NOT NULL,
                released    boolean NOT NULL DEFAULT false,
                PRIMARY KEY (project_key, session_id))""",
        ],
        # Run records (`RunRecords`): a run's manifest rows and lineage, so any machine reads them. Times are
        # epoch ms on the server's clock; ``arrival`` orders what shares a time
        # (two runs created in one millisecond, a run's rows with one start time) by arrival.
        3: [
            f"""CREATE TABLE IF NOT EXISTS {s}.runs (
                run_id     text COLLATE "C" PRIMARY KEY,
                arrival    bigint GENERATED ALWAYS AS IDENTITY,
                created_at bigint NOT NULL,
                updated_at bigint NOT NULL)""",
            f"""CREATE TABLE IF NOT EXISTS {s}.run_rows (
                run_id     text COLLATE "C" NOT NULL,
                step       text COLLATE "C" NOT NULL,
                started_at double precision NOT NULL,
                arrival    bigint GENERATED ALWAYS AS IDENTITY,
                row_json   text NOT NULL,
                PRIMARY KEY (run_id, step, started_at))""",
            f"""CREATE TABLE IF NOT EXISTS {s}.run_lineage (
                run_id     text COLLATE "C" NOT NULL,
                step       text COLLATE "C" NOT NULL,
                session_id text NOT NULL,
                PRIMARY KEY (run_id, step))""",
        ],
    }


def _import_driver() -> tuple[Any, Any]:
    try:
        import psycopg
        import psycopg_pool
    except ImportError as exc:
        raise StoreError(
            f"the PostgreSQL session store needs the psycopg driver ({exc.name} is not installed): {EXTRA_HINT}"
        ) from None
    return psycopg, psycopg_pool


def describe_conninfo(conninfo: str) -> str:
    """``user@host:port/dbname`` of a libpq URL or ``key=value`` string — never the password."""
    try:
        from psycopg.conninfo import conninfo_to_dict

        parts = {k: str(v) for k, v in conninfo_to_dict(conninfo).items() if v is not None}
    except Exception:  # noqa: BLE001 - no driver, or a string libpq rejects: fall back to the URL's own parts
        from urllib.parse import urlsplit

        try:
            u = urlsplit(conninfo)
            parts = {
                "user": u.username or "",
                "host": u.hostname or "",
                "port": str(u.port or ""),
                "dbname": u.path.lstrip("/"),
            }
        except ValueError:
            return "postgresql://…"
    user = f"{parts['user']}@" if parts.get("user") else ""
    host = parts.get("host") or parts.get("hostaddr") or "localhost"
    port = f":{parts['port']}" if parts.get("port") else ""
    return f"postgresql://{user}{host}{port}/{parts.get('dbname', '')}"


def _read_committed(conn: psycopg.Connection[Any]) -> None:
    """Pin READ COMMITTED (every transaction says ``BEGIN ISOLATION LEVEL READ COMMITTED``): the append's
    correctness rests on a fresh snapshot per statement, whatever ``default_transaction_isolation`` the server
    or the role has."""
    import psycopg

    conn.isolation_level = psycopg.IsolationLevel.READ_COMMITTED


def _read_only(conn: psycopg.Connection[Any]) -> None:
    """READ COMMITTED as above, and the server refuses any write on this connection (``flower sessions``)."""
    _read_committed(conn)
    conn.execute("SET default_transaction_read_only = on")


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


def _first_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split("\n")[0].split()) or type(exc).__name__
    return text.removeprefix("connection failed: ")


class PostgresSessionStore(LeaseMethods, RunRecordMethods):
    """A `claude_agent_sdk.SessionStore` on PostgreSQL (``pip install 'flower-stores[postgres]'``).

    ``PostgresSessionStore(url, schema="flower", max_size=4)``: ``url`` is a libpq connection string
    (``postgresql://user:password@host:5432/db`` or ``host=… dbname=…``); the tables live in ``schema``, which
    is created (with its tables) on first use and records a schema version so later releases can migrate it.
    Opening connects once, so a wrong URL, a refused connection or a missing driver is a `StoreError` right
    away, with a one-line message that says what to fix.

    Implements the whole protocol, the `SessionIndex` questions (``has_session()``, ``has_entry()``,
    ``last_context()``, ``counts()``, ``where``) plus ``projects()``, the session lease (`SessionLeases`) and
    runs' manifest rows and lineage (`RunRecords`). Close it with ``close()`` or a ``with`` block.

    ``read_only=True`` opens an existing store for inspection (``flower sessions``): no schema is created or
    migrated (a URL or schema with no store is a `StoreError`), every connection is read-only on the server
    too, and ``append``/``delete`` raise `StoreError`.
    """

    def __init__(
        self,
        url: str,
        *,
        schema: str = "flower",
        min_size: int = 1,
        max_size: int = 4,
        connect_timeout: float = 10.0,
        read_only: bool = False,
    ) -> None:
        if not _IDENTIFIER.fullmatch(schema):
            raise StoreError(
                f"schema name {schema!r} is not a plain SQL identifier; use letters, digits and _ (e.g. 'flower')"
            )
        self.url = url
        self.schema = schema
        self.where = describe_conninfo(url)
        self.read_only = read_only
        self._psycopg, pool_module = _import_driver()
        self._pool_timeout: type[Exception] = pool_module.PoolTimeout
        self._lock = threading.Lock()
        self._closed = False
        s = f'"{schema}"'
        self._sql = _Statements(s)
        self._connect_kwargs: dict[str, Any] = {"autocommit": True}
        if "connect_timeout" not in url:
            self._connect_kwargs["connect_timeout"] = max(1, round(connect_timeout))
        if "application_name" not in url:
            self._connect_kwargs["application_name"] = "flower-stores"  # so a DBA sees who holds a connection
        # One direct connection first: the pool reports a failed connect only as a timeout, and the user needs
        # libpq's own reason (refused, bad password, no such database) to fix it.
        try:
            with self._psycopg.connect(url, **self._connect_kwargs) as conn:
                if read_only:
                    self._check_readable(conn)
                else:
                    self._ensure_schema(conn)
        except self._psycopg.Error as exc:
            raise StoreError(self._connect_problem(exc)) from exc
        self._pool: ConnectionPool = pool_module.ConnectionPool(
            url,
            min_size=min_size,
            max_size=max(max_size, min_size, 1),
            kwargs=self._connect_kwargs,
            open=True,
            name="flower-stores",
            timeout=max(connect_timeout, 30.0),
            configure=_read_only if read_only else _read_committed,
        )

    # --- opening ----------------------------------------------------------------------------------

    def _connect_problem(self, exc: BaseException) -> str:
        reason = _first_line(exc)
        lowered = reason.lower()
        if "does not exist" in lowered and "database" in lowered:
            fix = "create it (createdb) or put an existing database in the URL"
        elif "password" in lowered or "authentication" in lowered or "role" in lowered:
            fix = "check the user name and password in the URL"
        elif "permission denied" in lowered:
            fix = f"let this user create schema {self.schema!r}, or have an administrator create it once"
        elif "newer flower-stores" in lowered:
            return reason
        else:
            fix = "check that the server is running and that host, port and database in the URL are right"
        return f"cannot use the PostgreSQL session store at {self.where}: {reason}; {fix} (--store / FLOWER_STORE_URL)"

    def _ensure_schema(self, conn: psycopg.Connection[Any]) -> None:
        """Create or migrate the schema unless it is current; safe when many processes open at once."""
        if self._recorded_version(conn) == SCHEMA_VERSION:
            return  # the common case: one cheap read, no lock, no DDL
        s = self._sql.s
        with conn.transaction():
            # Concurrent CREATE … IF NOT EXISTS can still collide in the catalogs: one opener at a time.
            conn.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (_LOCK_SPACE, self.schema))
            conn.execute(f"CREATE SCHEMA IF NOT EXISTS {s}")
            conn.execute(f"CREATE TABLE IF NOT EXISTS {s}.store_info (name text PRIMARY KEY, value text NOT NULL)")
            row = conn.execute(f"SELECT value FROM {s}.store_info WHERE name = 'schema_version'").fetchone()
            found = int(row[0]) if row else 0
            if found > SCHEMA_VERSION:
                raise StoreError(self._too_new(found))
            for version, steps in sorted(_schema_steps(s).items()):
                if version > found:
                    for statement in steps:
                        conn.execute(statement)
            conn.execute(
                f"INSERT INTO {s}.store_info (name, value) VALUES ('schema_version', %s) ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                (str(SCHEMA_VERSION),),
            )

    def _check_readable(self, conn: psycopg.Connection[Any]) -> None:
        """Fail at construction, with one clear line, when there is no store of a version this release reads."""
        if self._recorded_version(conn) is None:
            raise StoreError(
                f"no session store at {self.where} (schema {self.schema!r}): nothing was ever written there; "
                "check the URL and the schema (--store / FLOWER_STORE_URL)"
            )

    def _check_writable(self) -> None:
        if self.read_only:
            raise StoreError(
                f"session store {self.where} was opened read-only; open it without read_only=True to write"
            )

    def _recorded_version(self, conn: psycopg.Connection[Any]) -> int | None:
        errors = self._psycopg.errors
        try:
            row = conn.execute(f"SELECT value FROM {self._sql.s}.store_info WHERE name = 'schema_version'").fetchone()
        except (errors.UndefinedTable, errors.InvalidSchemaName):
            return None
        found = int(row[0]) if row else 0
        if found > SCHEMA_VERSION:
            raise StoreError(self._too_new(found))
        return found

    def _too_new(self, found: int) -> str:
        return (
            f"the session store at {self.where} (schema {self.schema!r}) has schema version {found}, written by a newer "
            f"flower-stores (this one knows {SCHEMA_VERSION}); upgrade flower-stores on this machine"
        )

    # --- connections --------------------------------------------------------------------------------

    def _run(self, work: Callable[[psycopg.Connection[Any]], T]) -> T:
        """``work(conn)`` on a pooled connection; once more on a fresh one if the connection died under it.

        A server restart or a dropped network leaves dead connections in the pool, found only when used.
        Retrying is safe: reads are reads, and an append that may have committed is deduplicated on uuid (only
        a uuid-less entry of a batch whose COMMIT was lost in flight could be stored twice — the SDK's own retry
        of a failed batch has the same limit).
        """
        if self._closed:
            raise StoreError(f"session store {self.where} is closed; open a new PostgresSessionStore")
        # Exception classes of a driver imported on first use, named as the driver names them.
        OperationalError, PoolTimeout = self._psycopg.OperationalError, self._pool_timeout  # noqa: N806 - the driver's class names
        for attempt in (1, 2):
            conn: Any = None
            try:
                with self._pool.connection() as conn:
                    return work(conn)
            except OperationalError as exc:
                if attempt == 1 and conn is not None and conn.broken:
                    continue  # the pool drops the dead connection; the next one is new
                raise StoreError(f"the PostgreSQL session store at {self.where} failed: {_first_line(exc)}") from exc
            except PoolTimeout as exc:
                raise StoreError(
                    f"no connection to the PostgreSQL session store at {self.where} within {self._pool.timeout:.0f}s: is the server up?"
                ) from exc
        raise AssertionError("unreachable")

    def close(self) -> None:
        """Close every pooled connection. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._pool.close()

    def __enter__(self) -> PostgresSessionStore:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

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
            conn.execute(sql.session_lock_shared, (_LOCK_SPACE, session))
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
                raise fence_error(lease, *_lease_and_now(found))
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
                    conn.execute(sql.session_lock, (_LOCK_SPACE, k))
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

    # --- the session lease (the rules are in _lease; this supplies the transaction and the clock) ------------

    def _lease_write(self, project_key: str, session_id: str, decide: Decision) -> LeaseRow | None:
        self._check_writable()
        sql = self._sql
        session = store_key({"project_key": project_key, "session_id": session_id})

        def work(conn: psycopg.Connection[Any]) -> LeaseRow | None:
            with conn.transaction():
                # Exclusive, where appends to the session hold it shared (see _append): no append is between its
                # fence check and its commit while the lease changes. FOR UPDATE keeps the row for this decision.
                conn.execute(sql.session_lock, (_LOCK_SPACE, session))
                new = decide(
                    *_lease_and_now(conn.execute(sql.lease_row_now_for_update, (project_key, session_id)).fetchone())
                )
                if new is not None:
                    conn.execute(
                        sql.write_lease,
                        (
                            project_key,
                            session_id,
                            new.epoch,
                            new.host,
                            new.pid,
                            new.run_id,
                            new.acquired_ms,
                            new.renewed_ms,
                            new.expires_ms,
                            new.released,
                        ),
                    )
                return new

        return self._run(work)

    def _lease_read(self, project_key: str, session_id: str) -> tuple[LeaseRow | None, int]:
        errors = self._psycopg.errors
        try:
            row = self._run(lambda conn: conn.execute(self._sql.lease_row_now, (project_key, session_id)).fetchone())
        except errors.UndefinedTable:
            if not self.read_only:
                raise
            # A schema from before leases, opened read-only (so not migrated): nobody ever leased here.
            row = self._run(lambda conn: conn.execute(f"SELECT {_NOW_MS}, NULL").fetchone())
        return _lease_and_now(row)

    # --- run records (the rules are in _runs; these are its primitives) ------------------------------------

    def _runs_put_rows(self, run_id: str, rows: list[EncodedRow]) -> None:
        self._check_writable()
        sql = self._sql

        def work(conn: psycopg.Connection[Any]) -> None:
            with conn.transaction():
                conn.execute(sql.touch_run, (run_id,))
                with conn.cursor() as cur:
                    cur.executemany(sql.put_run_row, [(run_id, step, started, text) for step, started, text in rows])

        self._run(work)

    def _runs_put_lineage(self, run_id: str, step: str, session_id: str) -> None:
        self._check_writable()
        sql = self._sql

        def work(conn: psycopg.Connection[Any]) -> None:
            with conn.pipeline(), conn.transaction():
                conn.execute(sql.touch_run, (run_id,))
                conn.execute(sql.put_lineage, (run_id, step, session_id))

        self._run(work)

    def _runs_read(self, query: str, params: tuple[str, ...]) -> list[Any]:
        try:
            return self._run(lambda conn: conn.execute(query, params).fetchall())
        except self._psycopg.errors.UndefinedTable:
            if not self.read_only:
                raise
            return []  # a schema from before run records, opened read-only (so not migrated): no run recorded

    def _runs_rows(self, run_id: str) -> list[str]:
        return [r[0] for r in self._runs_read(self._sql.run_rows, (run_id,))]

    def _runs_lineage(self, run_id: str) -> list[tuple[str, str]]:
        return [(r[0], r[1]) for r in self._runs_read(self._sql.run_lineage, (run_id,))]

    def _runs_ids(self) -> list[str]:
        return [r[0] for r in self._runs_read(self._sql.run_ids, ())]


_NOW_MS = "(extract(epoch FROM clock_timestamp()) * 1000)::bigint"
_LEASE_COLUMNS = "epoch, host, pid, run_id, acquired_at, renewed_at, expires_at, released"


def _lease_and_now(row: Any) -> tuple[LeaseRow | None, int]:
    """A ``lease_row_now`` result: the stored lease (None if the session was never leased) and the server's clock."""
    if row is None:  # never: the clock's row is always there
        raise StoreError("the lease query returned no row")
    now, *lease = row
    if lease[0] is None:
        return None, int(now)
    epoch, host, pid, run_id, acquired, renewed, expires, released = lease
    return LeaseRow(int(epoch), host, int(pid), run_id, int(acquired), int(renewed), int(expires), bool(released)), int(
        now
    )


def _insert_sql(s: str, *, fenced: bool) -> str:
    """The append's insert (see ``_Statements.insert``); ``fenced``: gated on the session's lease epoch."""
    fence_cte = (
        f"fence AS (SELECT 1 FROM {s}.leases WHERE project_key = %(project)s AND session_id = %(session_id)s "
        "AND epoch = %(epoch)s::bigint), "
        if fenced
        else ""
    )
    gate = " AND EXISTS (SELECT 1 FROM fence)" if fenced else ""
    return f"""
            WITH {fence_cte}batch AS (
                SELECT t.uid, t.payload, row_number() OVER (ORDER BY t.ord) AS n
                FROM unnest(%(uids)b::text[], %(payloads)b::text[]) WITH ORDINALITY AS t(uid, payload, ord)
                WHERE t.uid IS NULL
                   OR NOT EXISTS (SELECT 1 FROM {s}.entries e WHERE e.store_key = %(k)s AND e.uid = t.uid)
            ), ins AS (
                INSERT INTO {s}.entries (store_key, seq, uid, payload)
                SELECT %(k)s, m.next_seq + b.n - 1, b.uid, b.payload
                FROM batch b, {s}.meta m WHERE m.store_key = %(k)s{gate}
                RETURNING uid
            )
            UPDATE {s}.meta SET
                next_seq = next_seq + (SELECT count(*) FROM ins),
                mtime = GREATEST((extract(epoch FROM clock_timestamp()) * 1000)::bigint, mtime + 1)
            WHERE store_key = %(k)s{gate}
            RETURNING (SELECT count(*) FROM ins), mtime, (SELECT array_agg(uid) FROM ins WHERE uid IS NOT NULL)"""


class _Statements:
    """The SQL of one schema, built once (the schema name is a validated identifier, quoted)."""

    def __init__(self, s: str) -> None:
        self.s = s
        self.session_lock_shared = "SELECT pg_advisory_xact_lock_shared(%s, hashtext(%s))"
        self.session_lock = "SELECT pg_advisory_xact_lock(%s, hashtext(%s))"
        # Creates the key's meta row or locks the existing one: the lock every appender to this key queues on.
        self.lock_key = (
            f"INSERT INTO {s}.meta AS m (store_key, mtime, next_seq) VALUES (%s, 0, 0) "
            "ON CONFLICT (store_key) DO UPDATE SET next_seq = m.next_seq"
        )
        # One statement: keep the batch's entries whose uuid is not stored yet (uuid-less ones always), number
        # them from meta.next_seq, insert them, advance meta. Its snapshot is taken after lock_key returned, so
        # it sees whatever the previous lock holder committed. The arrays go in binary format (%b).
        self.insert = _insert_sql(s, fenced=False)
        # The same, fenced by a lease: only while the session's stored epoch is the lease's (read in this very
        # statement, so in this transaction and under the session lock); otherwise nothing and no row returned.
        self.insert_fenced = _insert_sql(s, fenced=True)
        self.summary = f"SELECT mtime, data FROM {s}.summaries WHERE project_key = %s AND session_id = %s"
        self.write_summary = (
            f"INSERT INTO {s}.summaries (project_key, session_id, mtime, data) VALUES (%s, %s, %s, %s) "
            "ON CONFLICT (project_key, session_id) DO UPDATE SET mtime = excluded.mtime, data = excluded.data"
        )
        self.load = f"SELECT payload FROM {s}.entries WHERE store_key = %s ORDER BY seq"
        self.has_entry = f"SELECT 1 FROM {s}.entries WHERE store_key = %s AND uid = %s LIMIT 1"
        self.newest = f"SELECT payload FROM {s}.entries WHERE store_key = %s ORDER BY seq DESC LIMIT %s"
        self.keys_in_range = f"SELECT store_key, mtime FROM {s}.meta WHERE store_key >= %s AND store_key < %s"
        self.keys_in_range_sorted = (
            f"SELECT store_key FROM {s}.meta WHERE store_key >= %s AND store_key < %s ORDER BY store_key"
        )
        self.summaries = f"SELECT session_id, mtime, data FROM {s}.summaries WHERE project_key = %s"
        self.delete_meta = f"DELETE FROM {s}.meta WHERE store_key = %s"
        self.delete_entries = f"DELETE FROM {s}.entries WHERE store_key = %s"
        self.delete_tree_meta = f"DELETE FROM {s}.meta WHERE store_key = %s OR (store_key >= %s AND store_key < %s)"
        self.delete_tree_entries = (
            f"DELETE FROM {s}.entries WHERE store_key = %s OR (store_key >= %s AND store_key < %s)"
        )
        self.delete_summary = f"DELETE FROM {s}.summaries WHERE project_key = %s AND session_id = %s"
        self.projects = f"SELECT DISTINCT split_part(store_key, '/', 1) FROM {s}.meta ORDER BY 1"
        self.has_key = f"SELECT 1 FROM {s}.meta WHERE store_key = %s"
        # next_seq of a key is its entry count: entries are only ever added at next_seq, and deleted with it.
        self.counts = f"SELECT count(*), coalesce(sum(next_seq), 0) FROM {s}.meta"
        self.counts_in_range = (
            f"SELECT count(*), coalesce(sum(next_seq), 0) FROM {s}.meta WHERE store_key >= %s AND store_key < %s"
        )
        # The session's lease row (all NULL when it was never leased) beside the server's clock, read together.
        lease_row = (
            f"SELECT {_NOW_MS}, l.* FROM (SELECT 1) one LEFT JOIN "
            f"(SELECT {_LEASE_COLUMNS} FROM {s}.leases WHERE project_key = %s AND session_id = %s"
        )
        self.lease_row_now = lease_row + ") l ON true"
        self.lease_row_now_for_update = lease_row + " FOR UPDATE) l ON true"
        self.write_lease = (
            f"INSERT INTO {s}.leases (project_key, session_id, {_LEASE_COLUMNS}) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (project_key, session_id) DO UPDATE SET "
            + ", ".join(f"{c} = excluded.{c}" for c in _LEASE_COLUMNS.split(", "))
        )
        # Run records: every write stamps the run (created once, updated always) in the same transaction.
        self.touch_run = (
            f"INSERT INTO {s}.runs AS r (run_id, created_at, updated_at) VALUES (%s, {_NOW_MS}, {_NOW_MS}) "
            "ON CONFLICT (run_id) DO UPDATE SET updated_at = excluded.updated_at"
        )
        self.put_run_row = (
            f"INSERT INTO {s}.run_rows (run_id, step, started_at, row_json) VALUES (%s, %s, %s, %s) "
            "ON CONFLICT (run_id, step, started_at) DO UPDATE SET row_json = excluded.row_json"
        )
        self.run_rows = f"SELECT row_json FROM {s}.run_rows WHERE run_id = %s ORDER BY started_at, arrival"
        self.put_lineage = (
            f"INSERT INTO {s}.run_lineage (run_id, step, session_id) VALUES (%s, %s, %s) "
            "ON CONFLICT (run_id, step) DO UPDATE SET session_id = excluded.session_id"
        )
        self.run_lineage = f"SELECT step, session_id FROM {s}.run_lineage WHERE run_id = %s ORDER BY step"
        self.run_ids = f"SELECT run_id FROM {s}.runs ORDER BY created_at DESC, arrival DESC"
