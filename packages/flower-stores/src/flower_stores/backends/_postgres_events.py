"""The PostgreSQL store's run-log and inbox primitives (schema version 4): each one transaction, times on the
server's clock; the rules are in the events room. A schema from before version 4, opened read-only (so not
migrated), has no events."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..events import EventRow, HeadRow, MessageRow, RunEventMethods
from ._postgres_connection import PostgresConnection
from ._postgres_statements import LOCK_SPACE, NOW_MS

if TYPE_CHECKING:
    import psycopg

__all__ = ["PostgresEvents"]

# The second key of a run's advisory lock (the first is LOCK_SPACE): appends to one run's log take turns.
_EVENTS_LOCK = "SELECT pg_advisory_xact_lock(%s, hashtext('events/' || %s))"


class PostgresEvents(PostgresConnection, RunEventMethods):
    """`RunEventLog` and `RunInbox` on the schema's ``run_events``, ``run_heads`` and ``run_inbox`` tables."""

    def _events_append(self, run_id: str, events: list[tuple[str, str]], head: str | None) -> int:
        self._check_writable()
        s = self._sql.s

        def work(conn: psycopg.Connection[Any]) -> int:
            with conn.transaction():
                conn.execute(_EVENTS_LOCK, (LOCK_SPACE, run_id))
                row = conn.execute(
                    f"SELECT last_seq, {NOW_MS} FROM {s}.run_heads WHERE run_id = %s", (run_id,)
                ).fetchone()
                now = int(row[1]) if row else int(conn.execute(f"SELECT {NOW_MS}").fetchone()[0])  # type: ignore[index]
                last = int(row[0]) if row else 0
                if events:
                    with conn.cursor() as cur:
                        cur.executemany(
                            f"INSERT INTO {s}.run_events (run_id, seq, at, kind, event) VALUES (%s, %s, %s, %s, %s)",
                            [(run_id, last + n, now, kind, text) for n, (kind, text) in enumerate(events, 1)],
                        )
                last += len(events)
                conn.execute(
                    f"INSERT INTO {s}.run_heads AS h (run_id, created_at, updated_at, last_seq, head) "
                    "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (run_id) DO UPDATE SET updated_at = excluded.updated_at, "
                    "last_seq = excluded.last_seq, head = coalesce(excluded.head, h.head)",
                    (run_id, now, now, last, head),
                )
                return last

        return self._run(work)

    def _events_read(self, run_id: str, after: int, limit: int) -> list[EventRow]:
        rows = self._read_added(
            f"SELECT seq, at, event FROM {self._sql.s}.run_events WHERE run_id = %s AND seq > %s ORDER BY seq LIMIT %s",
            (run_id, after, limit),
        )
        return [(int(q), int(a), e) for q, a, e in rows]

    def _events_heads(self, run_id: str | None) -> list[HeadRow]:
        heads = f"SELECT run_id, created_at, updated_at, last_seq, head FROM {self._sql.s}.run_heads"
        if run_id is None:
            rows = self._read_added(heads + " ORDER BY created_at DESC, arrival DESC", ())
        else:
            rows = self._read_added(heads + " WHERE run_id = %s", (run_id,))
        return [(r, int(c), int(u), int(q), h) for r, c, u, q, h in rows]

    def _events_live_runs(self) -> list[str]:
        rows = self._read_added(
            f"SELECT DISTINCT run_id FROM {self._sql.s}.leases WHERE NOT released AND expires_at > {NOW_MS}", ()
        )
        return [r[0] for r in rows]

    def _inbox_post(self, run_id: str, kind: str, text: str, sender: str, question: str) -> tuple[int, int]:
        self._check_writable()
        sql = (
            f"INSERT INTO {self._sql.s}.run_inbox (run_id, at, kind, text, sender, question) "
            f"VALUES (%s, {NOW_MS}, %s, %s, %s, %s) RETURNING id, at"
        )

        def work(conn: psycopg.Connection[Any]) -> tuple[int, int]:
            with conn.transaction():
                row = conn.execute(sql, (run_id, kind, text, sender, question)).fetchone()
            return int(row[0]), int(row[1])  # type: ignore[index]

        return self._run(work)

    def _inbox_take(self, run_id: str) -> list[MessageRow]:
        if self.read_only:
            return []
        # One statement: the rows nobody took are marked and returned; a concurrent taker waits on the row locks
        # and then finds them taken (its WHERE is checked again), so no message is taken twice.
        sql = (
            f"UPDATE {self._sql.s}.run_inbox SET taken_at = {NOW_MS} "
            "WHERE run_id = %s AND taken_at IS NULL RETURNING id, kind, text, sender, question, at"
        )

        def work(conn: psycopg.Connection[Any]) -> list[Any]:
            with conn.transaction():
                return conn.execute(sql, (run_id,)).fetchall()

        rows = sorted(self._run(work))
        return [(int(i), k, t, snd, q, int(a)) for i, k, t, snd, q, a in rows]
