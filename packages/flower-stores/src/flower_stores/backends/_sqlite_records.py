"""The SQLite store's lease and run-record primitives: each one write transaction (``BEGIN IMMEDIATE``), its
clock read while the write lock is held. The rules are in the lease and runs rooms; these supply the storage."""

from __future__ import annotations

import sqlite3

from ..lease import Decision, Lease, LeaseMethods, LeaseRow, fence_error
from ..runs import EncodedRow, RunRecordMethods
from ._sqlite_connection import SqliteConnection
from ._sqlite_schema import LEASE_COLUMNS, now_ms

__all__ = ["SqliteRecords"]


class SqliteRecords(SqliteConnection, LeaseMethods, RunRecordMethods):
    """The lease (`LeaseMethods`) and run records (`RunRecordMethods`) on the SQLite file's ``leases`` and
    ``runs`` / ``run_rows`` / ``run_lineage`` tables."""

    # --- the session lease (the rules are in ..lease; this supplies the transaction and the clock) ------------

    def _lease_write(self, project_key: str, session_id: str, decide: Decision) -> LeaseRow | None:
        # BEGIN IMMEDIATE holds the database's write lock: no append (fenced or not) and no other lease change
        # interleaves, and the clock is read while it is held.
        with self._transaction() as db:
            new = decide(self._lease_row(db, project_key, session_id), now_ms())
            if new is not None:
                db.execute(
                    f"INSERT OR REPLACE INTO leases (project_key, session_id, {LEASE_COLUMNS}) "
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
            return self._lease_row(self._connection(), project_key, session_id), now_ms()
        except sqlite3.OperationalError as exc:
            if self.read_only and "no such table" in str(exc):
                return None, now_ms()  # a file from before leases, opened read-only: nobody ever leased here
            raise

    def _check_fence(self, db: sqlite3.Connection, lease: Lease) -> None:
        row = db.execute(
            "SELECT epoch FROM leases WHERE project_key = ? AND session_id = ?", (lease.project_key, lease.session_id)
        ).fetchone()
        if row is None or row[0] != lease.epoch:
            raise fence_error(lease, self._lease_row(db, lease.project_key, lease.session_id), now_ms())

    @staticmethod
    def _lease_row(db: sqlite3.Connection, project_key: str, session_id: str) -> LeaseRow | None:
        row = db.execute(
            f"SELECT {LEASE_COLUMNS} FROM leases WHERE project_key = ? AND session_id = ?", (project_key, session_id)
        ).fetchone()
        if row is None:
            return None
        epoch, host, pid, run_id, acquired, renewed, expires, released = row
        return LeaseRow(epoch, host, pid, run_id, acquired, renewed, expires, bool(released))

    # --- run records (the rules are in ..runs; these are its primitives) ------------------------------------

    def _touch_run(self, db: sqlite3.Connection, run_id: str) -> None:
        now = now_ms()
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

    def _runs_rows(self, run_id: str) -> list[str]:
        rows = self._read_added("SELECT row_json FROM run_rows WHERE run_id = ? ORDER BY started_at, rowid", (run_id,))
        return [r[0] for r in rows]

    def _runs_lineage(self, run_id: str) -> list[tuple[str, str]]:
        rows = self._read_added("SELECT step, session_id FROM run_lineage WHERE run_id = ? ORDER BY step", (run_id,))
        return [(r[0], r[1]) for r in rows]

    def _runs_ids(self) -> list[str]:
        return [r[0] for r in self._read_added("SELECT run_id FROM runs ORDER BY created_at DESC, rowid DESC", ())]
