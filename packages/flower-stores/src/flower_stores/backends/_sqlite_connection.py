"""`SqliteConnection`: the SQLite store's connections — one per thread, in WAL mode, or read-only — and its
write transaction, which holds the database's write lock from its first statement."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from os import PathLike
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from .._shared.errors import StoreError
from ._sqlite_schema import BUSY_TIMEOUT_S, SCHEMA, create_private, wal

__all__ = ["SqliteConnection"]


class SqliteConnection:
    """The file ``path`` and this process's connections to it (see `SqliteSessionStore`)."""

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
        create_private(self.path)
        with self._transaction() as db:
            # executescript() would COMMIT our BEGIN first, so the DDL runs statement by statement.
            for statement in filter(None, (s.strip() for s in SCHEMA.split(";"))):
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
                mode = wal(db)
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

    def _read_added(self, query: str, params: tuple[Any, ...]) -> list[Any]:
        """The rows of a read of tables a later release added (run records, the run log): none from a file from
        before them opened read-only (a writable open adds them)."""
        try:
            return self._connection().execute(query, params).fetchall()
        except sqlite3.OperationalError as exc:
            if self.read_only and "no such table" in str(exc):
                return []
            raise

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

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

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
