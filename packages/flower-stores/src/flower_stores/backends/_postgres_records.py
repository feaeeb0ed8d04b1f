"""The PostgreSQL store's lease and run-record primitives: each one transaction, times on the server's clock.
The rules are in the lease and runs rooms; these supply the storage."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..lease import Decision, LeaseMethods, LeaseRow
from ..runs import EncodedRow, RunRecordMethods
from ._keys import store_key
from ._postgres_connection import PostgresConnection
from ._postgres_statements import LOCK_SPACE, NOW_MS, lease_and_now

if TYPE_CHECKING:
    import psycopg

__all__ = ["PostgresRecords"]


class PostgresRecords(PostgresConnection, LeaseMethods, RunRecordMethods):
    """The lease (`LeaseMethods`) and run records (`RunRecordMethods`) on the schema's ``leases`` and ``runs`` /
    ``run_rows`` / ``run_lineage`` tables."""

    # --- the session lease (the rules are in ..lease; this supplies the transaction and the clock) ------------

    def _lease_write(self, project_key: str, session_id: str, decide: Decision) -> LeaseRow | None:
        self._check_writable()
        sql = self._sql
        session = store_key({"project_key": project_key, "session_id": session_id})

        def work(conn: psycopg.Connection[Any]) -> LeaseRow | None:
            with conn.transaction():
                # Exclusive, where appends to the session hold it shared (see _append): no append is between its
                # fence check and its commit while the lease changes. FOR UPDATE keeps the row for this decision.
                conn.execute(sql.session_lock, (LOCK_SPACE, session))
                new = decide(
                    *lease_and_now(conn.execute(sql.lease_row_now_for_update, (project_key, session_id)).fetchone())
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
            row = self._run(lambda conn: conn.execute(f"SELECT {NOW_MS}, NULL").fetchone())
        return lease_and_now(row)

    # --- run records (the rules are in ..runs; these are its primitives) ------------------------------------

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

    def _runs_rows(self, run_id: str) -> list[str]:
        return [r[0] for r in self._read_added(self._sql.run_rows, (run_id,))]

    def _runs_lineage(self, run_id: str) -> list[tuple[str, str]]:
        return [(r[0], r[1]) for r in self._read_added(self._sql.run_lineage, (run_id,))]

    def _runs_ids(self) -> list[str]:
        return [r[0] for r in self._read_added(self._sql.run_ids, ())]
