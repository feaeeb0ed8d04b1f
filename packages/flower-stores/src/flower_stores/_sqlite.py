"""`SqliteSessionStore`: the SDK's SessionStore protocol on one SQLite file that several processes share.

Concurrency model (why it is safe for parallel runs in one run dir):

- WAL journal, so readers never block the writer and the writer never blocks readers;
- every append is one ``BEGIN IMMEDIATE`` transaction: it takes the database's write lock *before* it reads
  ``meta.next_seq`` and the already-stored uuids, so two processes can never hand out the same ``seq`` or
  both insert the same uuid — ``seq`` stays contiguous per key and nothing is lost or duplicated;
- a busy timeout makes a writer wait for the lock instead of failing while another process commits.

All SQLite work runs in a worker thread (anyio), one connection per thread, so a 20 MB load never blocks the
event loop and two loads in one process do not wait for each other.

``read_only=True`` opens an existing file for inspection (``flower analyze``, ``flower sessions``): no directory
is created, no schema written, no journal mode set, and every write raises `StoreError`.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from os import PathLike
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import anyio.to_thread

from ._common import StoreError, context_tokens, fold_summary, parsed, store_key
from ._common import dumps as _dumps
from ._common import prefix_range as _prefix_range
from ._lease import Decision, Lease, LeaseRow, fence_error
from ._leasing import LeaseMethods
from ._runs import EncodedRow, RunRecordMethods

if TYPE_CHECKING:
    from claude_agent_sdk import (
        SessionKey,
        SessionListSubkeysKey,
        SessionStoreEntry,
        SessionStoreListEntry,
        SessionSummaryEntry,
    )

__all__ = ["SqliteSessionStore", "StoreError"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    store_key TEXT NOT NULL,
    seq       INTEGER NOT NULL,
    uid       TEXT,
    payload   TEXT NOT NULL,
    PRIMARY KEY (store_key, seq)
);
CREATE UNIQUE INDEX IF NOT EXISTS entries_uid
    ON entries(store_key, uid) WHERE uid IS NOT NULL;
CREATE TABLE IF NOT EXISTS meta (
    store_key TEXT PRIMARY KEY,
    mtime     INTEGER NOT NULL,
    next_seq  INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS summaries (
    project_key TEXT NOT NULL,
    session_id  TEXT NOT NULL,
    mtime       INTEGER NOT NULL,
    data        TEXT NOT NULL,
    PRIMARY KEY (project_key, session_id)
);
CREATE TABLE IF NOT EXISTS leases (
    project_key TEXT NOT NULL,
    session_id  TEXT NOT NULL,
    epoch       INTEGER NOT NULL,
    host        TEXT NOT NULL,
    pid         INTEGER NOT NULL,
    run_id      TEXT NOT NULL,
    acquired_at INTEGER NOT NULL,
    renewed_at  INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL,
    released    INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (project_key, session_id)
);
CREATE TABLE IF NOT EXISTS runs (
    run_id     TEXT PRIMARY KEY,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS run_rows (
    run_id     TEXT NOT NULL,
    step       TEXT NOT NULL,
    started_at REAL NOT NULL,
    row_json   TEXT NOT NULL,
    PRIMARY KEY (run_id, step, started_at)
);
CREATE TABLE IF NOT EXISTS run_lineage (
    run_id     TEXT NOT NULL,
    step       TEXT NOT NULL,
    session_id TEXT NOT NULL,
    PRIMARY KEY (run_id, step)
);
"""
# (Every statement is IF NOT EXISTS and runs on each writable open: a sessions.db from an older release — or
# the original's — gains the tables added since, e.g. `leases` or the run records' `runs`, `run_rows`, `run_lineage`, the first time a writer opens it.)

_LEASE_COLUMNS = "epoch, host, pid, run_id, acquired_at, renewed_at, expires_at, released"

# A writer waits this long for another process's transaction before giving up. Appends are small and quick;
# a long wait means something is badly wrong, and the SDK retries a failed batch anyway.
BUSY_TIMEOUT_S = 30.0


def _wal(db: sqlite3.Connection) -> str:
    """Switch ``db`` to WAL; the journal mode it reports. Retried while "database is locked": SQLite does not
    call the busy handler for this switch, and two processes opening a new store at once collide on it
    (seen: two asides of one run starting together, one refused at once)."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while True:
        try:
            return str(db.execute("PRAGMA journal_mode = WAL").fetchone()[0])
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(0.05)


# SQLite's default limit on bound parameters is 32766 since 3.32, but older builds stop at 999.
_PARAMS_PER_QUERY = 900


def _uid_key(uid: str) -> str | bytes:
    """The ``uid`` column value: the uuid itself, or — if it holds a lone surrogate — its bytes as a BLOB.

    A BLOB never equals a TEXT value in SQLite, so the odd uuid cannot collide with a normal one.
    """
    if uid.isascii():
        return uid
    try:
        uid.encode("utf-8")
    except UnicodeEncodeError:
        return uid.encode("utf-8", "surrogatepass")
    return uid


class SqliteSessionStore(LeaseMethods, RunRecordMethods):
    """A `claude_agent_sdk.SessionStore` on one SQLite file (the seed's ``sessions.db`` schema).

    Implements the whole protocol (``append``, ``load``, ``list_sessions``, ``list_session_summaries``,
    ``delete``, ``list_subkeys``), the `SessionIndex` questions (``has_session()``, ``has_entry()``,
    ``last_context()``, ``counts()``, ``where``) plus ``projects()``, and the session lease (`SessionLeases`:
    ``acquire_lease()`` … ``fenced(lease)``). Use it as ``ClaudeAgentOptions(session_store=store)``; close it
    with ``close()`` or a ``with`` block.
    """

    def __init__(self, path: str | PathLike[str], *, read_only: bool = False) -> None:
        self.path = Path(path).expanduser()
        self.read_only = read_only
        self._lock = threading.Lock()
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._closed = False
        self._last_mtime = 0
        if read_only:
            self._check_readable()
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(
                f"cannot create the directory for session store {self.path}: {exc.strerror or exc}; pass a path in a writable directory"
            ) from exc
        _create_private(self.path)
        with self._transaction() as db:
            # executescript() would COMMIT our BEGIN first, so the DDL runs statement by statement.
            for statement in filter(None, (s.strip() for s in _SCHEMA.split(";"))):
                db.execute(statement)

    # --- connections ------------------------------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        if self._closed:
            raise StoreError(f"session store {self.path} is closed; open a new SqliteSessionStore")
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is not None:
            return db
        with self._lock:
            if self._closed:  # closed while we waited for the lock
                raise StoreError(f"session store {self.path} is closed; open a new SqliteSessionStore")
            if self.read_only:
                db = self._open_read_only()
                self._connections.append(db)
                self._local.db = db
                return db
            try:
                # isolation_level=None: we issue BEGIN/COMMIT ourselves, so the write lock is taken when *we*
                # say (BEGIN IMMEDIATE), not lazily at the first INSERT after a read.
                db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
            except sqlite3.Error as exc:
                raise StoreError(
                    f"cannot open session store {self.path}: {exc}; pass a path in a writable directory"
                ) from exc
            try:
                db.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
                mode = _wal(db)
                if str(mode).lower() != "wal":
                    raise StoreError(
                        f"session store {self.path}: SQLite refused WAL mode ({mode}); put it on a local file system"
                    )
                # NORMAL is durable across process crashes in WAL mode; only a power loss can lose the last
                # commits, and the CLI's local JSONL is the primary copy anyway.
                db.execute("PRAGMA synchronous = NORMAL")
            except (sqlite3.Error, StoreError) as exc:
                db.close()
                if isinstance(exc, StoreError):
                    raise
                raise StoreError(
                    f"cannot open session store {self.path}: {exc}; pass the path of a SQLite file (or a new file)"
                ) from exc
            self._connections.append(db)
            self._local.db = db
            return db

    def _open_read_only(self) -> sqlite3.Connection:
        """A connection that cannot change the file, its journal mode or its directory.

        ``mode=ro`` still creates the ``-wal``/``-shm`` side files when they are missing (and fails where it
        cannot, e.g. on a read-only copy). They are missing only when no connection is open and the last one
        checkpointed everything into the main file, so then ``immutable=1`` reads the main file alone, which
        is complete, and touches nothing. While a writer is live its side files exist and ``mode=ro`` reads
        through them, so a running step's newest entries are seen too.
        """
        live = Path(f"{self.path}-wal").exists()
        mode = "mode=ro" if live else "mode=ro&immutable=1"
        uri = f"{self.path.absolute().as_uri()}?{mode}"
        try:
            db = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
            db.execute("PRAGMA query_only = ON")
            return db
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open session store {self.path} read-only: {exc}") from exc

    def _check_readable(self) -> None:
        """Fail at construction, with one clear line, when the file is missing or is not a flower store."""
        if not self.path.is_file():
            raise StoreError(f"no session store at {self.path}")
        try:
            tables = {
                row[0] for row in self._connection().execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            }
        except sqlite3.Error as exc:
            self.close()
            raise StoreError(f"{self.path} is not a readable SQLite database ({exc})") from exc
        if not {"entries", "meta"} <= tables:
            self.close()
            raise StoreError(f"{self.path} is a SQLite database but not a session store (no entries/meta tables)")

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """A write transaction that holds the database's write lock from its first statement."""
        if self.read_only:
            raise StoreError(f"session store {self.path} was opened read-only; open it without read_only=True to write")
        db = self._connection()
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            db.execute("ROLLBACK")
            raise
        else:
            db.execute("COMMIT")

    def close(self) -> None:
        """Close every connection this store opened (in any thread). Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            connections, self._connections = self._connections, []
        for db in connections:
            try:
                db.close()
            except sqlite3.Error:
                pass  # closing must not fail; the data is committed already

    def __enter__(self) -> SqliteSessionStore:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SqliteSessionStore({str(self.path)!r})"

    @property
    def where(self) -> str:
        """The file, as messages name it."""
        return str(self.path)

    # --- the storage clock ------------------------------------------------------------------------

    def _next_mtime(self, stored: int) -> int:
        """Epoch ms, strictly greater than this key's stored mtime and this instance's previous stamp.

        Taking the stored value into account makes mtime strictly increasing per key across *processes* too
        (the read happens under the write lock), not only within one instance: every append, by any process,
        stamps the key later than the append before it.
        """
        now = int(time.time() * 1000)
        with self._lock:
            now = max(now, self._last_mtime + 1, stored + 1)
            self._last_mtime = now
        return now

    # --- SessionStore protocol ----------------------------------------------------------------------

    async def append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        """Persist a batch. Entries whose ``uuid`` is already stored under ``key`` are skipped (SDK retries)."""
        if not entries:
            return
        await anyio.to_thread.run_sync(self._append_sync, key, entries, None)

    def _append_sync(self, key: SessionKey, entries: Sequence[SessionStoreEntry], lease: Lease | None) -> None:
        """The append's one write transaction; with ``lease``, fenced by it (`append_fenced`)."""
        k = store_key(key)
        # Serialise before taking the write lock: the lock is shared by every process on this file.
        # Anything the SDK hands over is stored, whatever its content: a line that is not an object has no uuid
        # (never deduplicated) and is left out of the summary fold, which reads objects only.
        batch: list[tuple[str | bytes | None, str, SessionStoreEntry]] = []
        seen: set[str | bytes] = set()
        for entry in entries:
            uid = entry.get("uuid") if type(entry) is dict else None
            key_uid = _uid_key(uid) if type(uid) is str else None
            if key_uid is not None:
                if key_uid in seen:
                    continue
                seen.add(key_uid)
            batch.append((key_uid, _dumps(entry), entry))
        with self._transaction() as db:
            if lease is not None:
                # Under the write lock, so no acquire can commit between this check and the insert below.
                self._check_fence(db, lease)
            if seen:
                stored = self._stored_uids(db, k, seen)
                if stored:
                    batch = [row for row in batch if row[0] is None or row[0] not in stored]
            if not batch:
                return  # a replayed batch: nothing new, so no new mtime and no summary fold
            row = db.execute("SELECT mtime, next_seq FROM meta WHERE store_key = ?", (k,)).fetchone()
            prev_mtime, seq = (row[0], row[1]) if row else (0, 0)
            now = self._next_mtime(prev_mtime)
            db.executemany(
                "INSERT INTO entries (store_key, seq, uid, payload) VALUES (?, ?, ?, ?)",
                [(k, seq + i, uid, payload) for i, (uid, payload, _) in enumerate(batch)],
            )
            db.execute(
                "INSERT INTO meta (store_key, mtime, next_seq) VALUES (?, ?, ?) "
                "ON CONFLICT(store_key) DO UPDATE SET mtime = excluded.mtime, next_seq = excluded.next_seq",
                (k, now, seq + len(batch)),
            )
            if key.get("subpath") is None:
                self._fold_summary(db, key, [entry for _, _, entry in batch if type(entry) is dict], now)

    @staticmethod
    def _stored_uids(db: sqlite3.Connection, k: str, uids: Iterable[str | bytes]) -> set[str | bytes]:
        found: set[str | bytes] = set()
        pending = list(uids)
        for start in range(0, len(pending), _PARAMS_PER_QUERY):
            chunk = pending[start : start + _PARAMS_PER_QUERY]
            marks = ",".join("?" * len(chunk))
            found.update(
                r[0]
                for r in db.execute(f"SELECT uid FROM entries WHERE store_key = ? AND uid IN ({marks})", (k, *chunk))
            )
        return found

    @staticmethod
    def _fold_summary(db: sqlite3.Connection, key: SessionKey, new: list[SessionStoreEntry], now: int) -> None:
        # One fold per batch, inside the same transaction as the rows it describes: the read-fold-write is
        # serialised by the write lock, so two processes appending to one session cannot lose an update.
        row = db.execute(
            "SELECT mtime, data FROM summaries WHERE project_key = ? AND session_id = ?",
            (key["project_key"], key["session_id"]),
        ).fetchone()
        prev: SessionSummaryEntry | None = (
            {"session_id": key["session_id"], "mtime": row[0], "data": json.loads(row[1])} if row else None
        )
        folded = fold_summary(prev, key, new)
        db.execute(
            "INSERT INTO summaries (project_key, session_id, mtime, data) VALUES (?, ?, ?, ?) "
            "ON CONFLICT(project_key, session_id) DO UPDATE SET mtime = excluded.mtime, data = excluded.data",
            (key["project_key"], key["session_id"], now, _dumps(folded["data"])),
        )

    async def load(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        """Every entry of ``key`` in append order, or ``None`` if nothing was ever stored under it."""
        return await anyio.to_thread.run_sync(self.load_sync, key)

    def load_sync(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        """`load` without the worker thread, for synchronous callers (and benchmarks)."""
        entries = self.iter_entries(key)
        return None if entries is None else list(entries)

    def iter_entries(self, key: SessionKey) -> Iterator[SessionStoreEntry] | None:
        """The entries of ``key`` in append order, parsed as they are consumed (None if nothing is stored).

        The rows are read at once; the JSON is parsed a slice at a time, so a consumer that looks at each entry
        as it comes (the load-time rewrite does) reads it while it is still in cache.
        """
        payloads = [
            r[0]
            for r in self._connection().execute(
                "SELECT payload FROM entries WHERE store_key = ? ORDER BY seq", (store_key(key),)
            )
        ]
        if not payloads:
            return None
        return parsed(payloads)

    async def list_sessions(self, project_key: str) -> list[SessionStoreListEntry]:
        return await anyio.to_thread.run_sync(self._list_sessions, project_key)

    def _list_sessions(self, project_key: str) -> list[SessionStoreListEntry]:
        low, high = _prefix_range(project_key + "/")
        rows = self._connection().execute(
            "SELECT store_key, mtime FROM meta WHERE store_key >= ? AND store_key < ?", (low, high)
        )
        out: list[SessionStoreListEntry] = []
        for k, mtime in rows:
            rest = k[len(low) :]
            if rest and "/" not in rest:  # main transcripts only
                out.append({"session_id": rest, "mtime": mtime})
        return out

    async def list_session_summaries(self, project_key: str) -> list[SessionSummaryEntry]:
        return await anyio.to_thread.run_sync(self._list_session_summaries, project_key)

    def _list_session_summaries(self, project_key: str) -> list[SessionSummaryEntry]:
        rows = self._connection().execute(
            "SELECT session_id, mtime, data FROM summaries WHERE project_key = ?", (project_key,)
        )
        return [{"session_id": sid, "mtime": mtime, "data": json.loads(data)} for sid, mtime, data in rows]

    async def delete(self, key: SessionKey) -> None:
        """Delete a transcript; deleting a main transcript also deletes its subagent transcripts and summary."""
        await anyio.to_thread.run_sync(self._delete, key)

    def _delete(self, key: SessionKey) -> None:
        k = store_key(key)
        with self._transaction() as db:
            db.execute("DELETE FROM entries WHERE store_key = ?", (k,))
            db.execute("DELETE FROM meta WHERE store_key = ?", (k,))
            if key.get("subpath") is None:
                low, high = _prefix_range(k + "/")
                db.execute("DELETE FROM entries WHERE store_key >= ? AND store_key < ?", (low, high))
                db.execute("DELETE FROM meta WHERE store_key >= ? AND store_key < ?", (low, high))
                db.execute(
                    "DELETE FROM summaries WHERE project_key = ? AND session_id = ?",
                    (key["project_key"], key["session_id"]),
                )

    async def list_subkeys(self, key: SessionListSubkeysKey) -> list[str]:
        return await anyio.to_thread.run_sync(self._list_subkeys, key)

    def _list_subkeys(self, key: SessionListSubkeysKey) -> list[str]:
        low, high = _prefix_range(store_key(key) + "/")
        rows = self._connection().execute(
            "SELECT store_key FROM meta WHERE store_key >= ? AND store_key < ? ORDER BY store_key", (low, high)
        )
        return [k[len(low) :] for (k,) in rows]

    # --- flower's synchronous helpers ---------------------------------------------------------------

    def projects(self) -> list[str]:
        """Every project key with at least one stored transcript, sorted."""
        rows = self._connection().execute(
            "SELECT DISTINCT substr(store_key, 1, instr(store_key, '/') - 1) FROM meta ORDER BY 1"
        )
        return [r[0] for r in rows if r[0]]

    def list_sessions_sync(self, project_key: str) -> list[SessionStoreListEntry]:
        """`list_sessions` without the worker thread (and without an event loop), for synchronous readers."""
        return self._list_sessions(project_key)

    def list_subkeys_sync(self, key: SessionListSubkeysKey) -> list[str]:
        """`list_subkeys` without the worker thread (and without an event loop), for synchronous readers."""
        return self._list_subkeys(key)

    def has_session(self, project_key: str, session_id: str) -> bool:
        """Whether the main transcript exists (reads ``meta`` only, never a payload)."""
        k = store_key({"project_key": project_key, "session_id": session_id})
        return self._connection().execute("SELECT 1 FROM meta WHERE store_key = ?", (k,)).fetchone() is not None

    def has_entry(self, project_key: str, session_id: str, uuid: str) -> bool:
        """Whether the main transcript holds an entry with this ``uuid`` (one index lookup, no payload read).

        The Runtime asks it before it stops a session mid-turn: the SDK mirrors a message to the store a moment
        after it streams it, and what was not mirrored when the process ends is lost to a resume.
        """
        k = store_key({"project_key": project_key, "session_id": session_id})
        row = (
            self._connection()
            .execute("SELECT 1 FROM entries WHERE store_key = ? AND uid = ? LIMIT 1", (k, _uid_key(uuid)))
            .fetchone()
        )
        return row is not None

    def last_context(self, project_key: str, session_id: str, scan: int = 60) -> int:
        """Context size of the latest model call: input + cache-read + cache-creation tokens, or 0.

        Reads at most the last ``scan`` entries, newest first, and returns the first non-zero sum (synthetic
        error entries report zero usage and are passed over).
        """
        k = store_key({"project_key": project_key, "session_id": session_id})
        rows = self._connection().execute(
            "SELECT payload FROM entries WHERE store_key = ? ORDER BY seq DESC LIMIT ?", (k, max(0, int(scan)))
        )
        return context_tokens(r[0] for r in rows)

    def counts(self, project_key: str | None = None) -> tuple[int, int]:
        """``(transcripts, entries)`` stored — subagent transcripts included — in the store or in one project.

        From ``meta`` alone (``flower doctor``; no scan of the entries): a key's ``next_seq`` is its entry count,
        as entries are only ever added at ``next_seq`` and deleted together with their ``meta`` row.
        """
        query = "SELECT count(*), coalesce(sum(next_seq), 0) FROM meta"
        params: tuple[str, ...] = ()
        if project_key is not None:
            query += " WHERE store_key >= ? AND store_key < ?"
            params = _prefix_range(project_key + "/")
        row = self._connection().execute(query, params).fetchone()
        return (int(row[0]), int(row[1])) if row else (0, 0)

    # --- the session lease (the rules are in _lease; this supplies the transaction and the clock) ------------

    def _lease_write(self, project_key: str, session_id: str, decide: Decision) -> LeaseRow | None:
        # BEGIN IMMEDIATE holds the database's write lock: no append (fenced or not) and no other lease change
        # interleaves, and the clock is read while it is held.
        with self._transaction() as db:
            new = decide(self._lease_row(db, project_key, session_id), _now_ms())
            if new is not None:
                db.execute(
                    f"INSERT OR REPLACE INTO leases (project_key, session_id, {_LEASE_COLUMNS}) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
                        int(new.released),
                    ),
                )
            return new

    def _lease_read(self, project_key: str, session_id: str) -> tuple[LeaseRow | None, int]:
        try:
            return self._lease_row(self._connection(), project_key, session_id), _now_ms()
        except sqlite3.OperationalError as exc:
            if self.read_only and "no such table" in str(exc):
                return None, _now_ms()  # a file from before leases, opened read-only: nobody ever leased here
            raise

    def _check_fence(self, db: sqlite3.Connection, lease: Lease) -> None:
        row = db.execute(
            "SELECT epoch FROM leases WHERE project_key = ? AND session_id = ?", (lease.project_key, lease.session_id)
        ).fetchone()
        if row is None or row[0] != lease.epoch:
            raise fence_error(lease, self._lease_row(db, lease.project_key, lease.session_id), _now_ms())

    @staticmethod
    def _lease_row(db: sqlite3.Connection, project_key: str, session_id: str) -> LeaseRow | None:
        row = db.execute(
            f"SELECT {_LEASE_COLUMNS} FROM leases WHERE project_key = ? AND session_id = ?", (project_key, session_id)
        ).fetchone()
        if row is None:
            return None
        epoch, host, pid, run_id, acquired, renewed, expires, released = row
        return LeaseRow(epoch, host, pid, run_id, acquired, renewed, expires, bool(released))

    # --- run records (the rules are in _runs; these are its primitives) ------------------------------------

    def _touch_run(self, db: sqlite3.Connection, run_id: str) -> None:
        now = _now_ms()
        db.execute(
            "INSERT INTO runs (run_id, created_at, updated_at) VALUES (?, ?, ?) "
            "ON CONFLICT(run_id) DO UPDATE SET updated_at = excluded.updated_at",
            (run_id, now, now),
        )

    def _runs_put_rows(self, run_id: str, rows: list[EncodedRow]) -> None:
        with self._transaction() as db:
            self._touch_run(db, run_id)
            # An upsert keeps the row's rowid, so the row keeps its place among rows that share a start time.
            db.executemany(
                "INSERT INTO run_rows (run_id, step, started_at, row_json) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(run_id, step, started_at) DO UPDATE SET row_json = excluded.row_json",
                [(run_id, step, started, text) for step, started, text in rows],
            )

    def _runs_put_lineage(self, run_id: str, step: str, session_id: str) -> None:
        with self._transaction() as db:
            self._touch_run(db, run_id)
            db.execute(
                "INSERT INTO run_lineage (run_id, step, session_id) VALUES (?, ?, ?) "
                "ON CONFLICT(run_id, step) DO UPDATE SET session_id = excluded.session_id",
                (run_id, step, session_id),
            )

    def _runs_read(self, query: str, params: tuple[str, ...]) -> list[Any]:
        try:
            return self._connection().execute(query, params).fetchall()
        except sqlite3.OperationalError as exc:
            if self.read_only and "no such table" in str(exc):
                return []  # a file from before run records, opened read-only: no run recorded here
            raise

    def _runs_rows(self, run_id: str) -> list[str]:
        rows = self._runs_read("SELECT row_json FROM run_rows WHERE run_id = ? ORDER BY started_at, rowid", (run_id,))
        return [r[0] for r in rows]

    def _runs_lineage(self, run_id: str) -> list[tuple[str, str]]:
        rows = self._runs_read("SELECT step, session_id FROM run_lineage WHERE run_id = ? ORDER BY step", (run_id,))
        return [(r[0], r[1]) for r in rows]

    def _runs_ids(self) -> list[str]:
        return [r[0] for r in self._runs_read("SELECT run_id FROM runs ORDER BY created_at DESC, rowid DESC", ())]


def _now_ms() -> int:
    """The SQLite store's clock: this machine's wall clock (every process sharing the file runs on it)."""
    return int(time.time() * 1000)


def _create_private(path: Path) -> None:
    """Create a new store file readable by its owner only (0600), before SQLite opens it.

    A transcript holds every tool output the agent saw. SQLite creates the ``-wal`` and ``-shm`` files with
    the main file's permissions, so all three are private from the start (no chmod after the fact). An
    existing file is left as it is; a file that cannot be created here is left to SQLite's own open, whose
    error names the problem as before.
    """
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except OSError:
        pass  # exists already (FileExistsError), or SQLite's own open below says why it cannot
