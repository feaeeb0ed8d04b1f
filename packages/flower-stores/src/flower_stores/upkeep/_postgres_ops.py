"""Upkeep's SQL on a PostgreSQL store: its sessions with their bytes, the schema's size, and ``VACUUM``.

``VACUUM`` cannot run inside a transaction block, and the store's pool wraps work in transactions, so
compaction opens one autocommit connection of its own with the store's URL.
"""

from __future__ import annotations

from typing import Any

from .._shared.errors import StoreError
from ..backends import PostgresSessionStore
from ._model import StoreSize, UpkeepSession, main_sessions

__all__ = ["PostgresOps"]


class PostgresOps:
    """What `StoreUpkeep` asks of a `PostgresSessionStore` (synchronous; upkeep runs it in a worker thread)."""

    def __init__(self, store: PostgresSessionStore) -> None:
        self.store = store
        self.s = f'"{store.schema}"'  # the store checked it is a plain identifier

    def _connect(self) -> Any:
        import psycopg  # why: the driver is the `postgres` extra's; the store that exists proves it is installed

        try:
            return psycopg.connect(self.store.url, autocommit=True, application_name="flower-stores upkeep")
        except psycopg.Error as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise StoreError(f"cannot reach the PostgreSQL session store at {self.store.where}: {first}") from exc

    def sessions(self, project_key: str | None) -> list[UpkeepSession]:
        """The main transcripts (keys ``project/session``), in one project or all, oldest first."""
        with self._connect() as conn:
            rows = conn.execute(f"SELECT store_key, mtime FROM {self.s}.meta ORDER BY mtime, store_key").fetchall()
        return main_sessions(rows, project_key)

    def payload_bytes(self, session: UpkeepSession) -> int:
        """Bytes of the session's entries, its subagents' included (``octet_length`` reads no TOAST data)."""
        main = f"{session.project_key}/{session.session_id}"
        with self._connect() as conn:
            row = conn.execute(
                f"SELECT coalesce(sum(octet_length(payload)), 0) FROM {self.s}.entries "
                "WHERE store_key = %s OR (store_key >= %s AND store_key < %s)",
                (main, main + "/", main + "0"),  # "0" is the character after "/": every subkey sorts between
            ).fetchone()
        return int(row[0]) if row else 0

    def live_leases(self) -> list[tuple[str, str]]:
        """``(project_key, session_id)`` of every session a live lease holds now (the server's clock, as leases use)."""
        with self._connect() as conn:
            rows = conn.execute(
                f"SELECT project_key, session_id FROM {self.s}.leases WHERE NOT released "
                "AND expires_at > (extract(epoch FROM clock_timestamp()) * 1000)::bigint ORDER BY 1, 2"
            ).fetchall()
        return [(str(p), str(s)) for p, s in rows]

    def size(self) -> StoreSize:
        """Each table of the schema with its indexes and TOAST (``pg_total_relation_size``)."""
        with self._connect() as conn:
            rows = conn.execute(
                "SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c "
                "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind = 'r'",
                (self.store.schema,),
            ).fetchall()
        detail = {str(name): int(size) for name, size in rows}
        return StoreSize(sum(detail.values()), detail)

    def compact(self, full: bool) -> None:
        """``VACUUM (ANALYZE)`` marks deleted rows' space reusable while runs go on; ``VACUUM FULL`` rewrites the
        tables and gives the space back to the file system, but locks each table while it runs (appends wait)."""
        with self._connect() as conn:
            present = {
                r[0]
                for r in conn.execute(
                    "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                    "WHERE n.nspname = %s AND c.relkind = 'r'",
                    (self.store.schema,),
                )
            }
            # Every table the schema holds, whatever its version: transcripts, leases, run records, events…
            tables = ", ".join(f'{self.s}."{t}"' for t in sorted(present))
            if tables:
                conn.execute(f"VACUUM (FULL, ANALYZE) {tables}" if full else f"VACUUM (ANALYZE) {tables}")
