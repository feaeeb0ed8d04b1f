"""Upkeep's SQL on a SQLite store: its sessions with their bytes, its size on disk, and compaction.

Compaction runs on a connection of its own, not the store's per-thread ones: ``VACUUM`` refuses to run inside a
transaction and rewrites the whole file, so it gets a connection nothing else uses, with the store's busy
timeout (it waits for a writer of another process to commit rather than fail).
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from ..backends import SqliteSessionStore
from ._model import StoreSize, UpkeepSession, main_sessions

__all__ = ["SqliteOps"]

_BUSY_TIMEOUT_S = 30.0


class SqliteOps:
    """What `StoreUpkeep` asks of a `SqliteSessionStore` (all synchronous; upkeep runs them in a worker thread)."""

    def __init__(self, store: SqliteSessionStore) -> None:
        self.store = store
        self.path = Path(store.path)

    def _connect(self) -> sqlite3.Connection:
        if self.store.read_only:
            # Like the store's own read-only connections: nothing created, nothing written (``flower doctor``).
            uri = f"{self.path.absolute().as_uri()}?mode=ro"
            return sqlite3.connect(uri, uri=True, timeout=_BUSY_TIMEOUT_S, isolation_level=None)
        db = sqlite3.connect(self.path, timeout=_BUSY_TIMEOUT_S, isolation_level=None)
        db.execute(f"PRAGMA busy_timeout = {int(_BUSY_TIMEOUT_S * 1000)}")
        return db

    def sessions(self, project_key: str | None) -> list[UpkeepSession]:
        """The main transcripts (keys ``project/session``), in one project or all, oldest first."""
        db = self._connect()
        try:
            rows = db.execute("SELECT store_key, mtime FROM meta ORDER BY mtime, store_key").fetchall()
        finally:
            db.close()
        return main_sessions(rows, project_key)

    def payload_bytes(self, session: UpkeepSession) -> int:
        """Bytes of the session's entries, its subagents' included (a range scan of the entries it owns)."""
        main = f"{session.project_key}/{session.session_id}"
        db = self._connect()
        try:
            row = db.execute(
                "SELECT coalesce(sum(length(CAST(payload AS BLOB))), 0) FROM entries "
                "WHERE store_key = ? OR (store_key >= ? AND store_key < ?)",
                (main, main + "/", main + "0"),  # "0" is the character after "/": every subkey sorts between
            ).fetchone()
        finally:
            db.close()
        return int(row[0]) if row else 0

    def live_leases(self) -> list[tuple[str, str]]:
        """``(project_key, session_id)`` of every session a live lease holds now (the storage clock: this machine's)."""
        db = self._connect()
        try:
            rows = db.execute(
                "SELECT project_key, session_id FROM leases WHERE released = 0 AND expires_at > ? "
                "ORDER BY project_key, session_id",
                (int(time.time() * 1000),),
            ).fetchall()
        except sqlite3.OperationalError:  # a file written before leases existed: nothing can hold one
            return []
        finally:
            db.close()
        return [(str(p), str(s)) for p, s in rows]

    def size(self) -> StoreSize:
        """The file, its WAL and shared-memory side files, and the free pages a VACUUM gives back."""
        detail = {}
        for suffix in ("", "-wal", "-shm"):
            side = Path(f"{self.path}{suffix}")
            detail[side.name] = side.stat().st_size if side.exists() else 0
        db = self._connect()
        try:
            page_size = int(db.execute("PRAGMA page_size").fetchone()[0])
            free = int(db.execute("PRAGMA freelist_count").fetchone()[0])
        finally:
            db.close()
        return StoreSize(sum(detail.values()), detail, reclaimable_bytes=free * page_size)

    def compact(self, full: bool) -> None:
        """``VACUUM`` (SQLite's is always a full rewrite, so ``full`` changes nothing here), then
        ``wal_checkpoint(TRUNCATE)`` so the WAL the rewrite filled is emptied back to zero bytes."""
        del full  # one kind of VACUUM in SQLite
        db = self._connect()
        try:
            db.execute("VACUUM")
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            db.close()
