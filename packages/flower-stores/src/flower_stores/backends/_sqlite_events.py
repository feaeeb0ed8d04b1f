"""The SQLite store's run-log and inbox primitives (``run_events``, ``run_heads``, ``run_inbox``): each one
transaction; the rules are in the events room. A file from before these tables, opened read-only, has no events."""

from __future__ import annotations

from ..events import EventRow, HeadRow, MessageRow, RunEventMethods
from ._sqlite_connection import SqliteConnection
from ._sqlite_schema import now_ms

__all__ = ["SqliteEvents"]

_HEADS = "SELECT run_id, created_at, updated_at, last_seq, head FROM run_heads"


class SqliteEvents(SqliteConnection, RunEventMethods):
    """`RunEventLog` and `RunInbox` on the SQLite file."""

    def _events_append(self, run_id: str, events: list[tuple[str, str]], head: str | None) -> int:
        with self._transaction() as db:
            now = now_ms()
            row = db.execute("SELECT last_seq FROM run_heads WHERE run_id = ?", (run_id,)).fetchone()
            last = int(row[0]) if row else 0
            db.executemany(
                "INSERT INTO run_events (run_id, seq, at, kind, event) VALUES (?, ?, ?, ?, ?)",
                [(run_id, last + n, now, kind, text) for n, (kind, text) in enumerate(events, 1)],
            )
            last += len(events)
            db.execute(
                "INSERT INTO run_heads (run_id, created_at, updated_at, last_seq, head) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT(run_id) DO UPDATE SET updated_at = excluded.updated_at, last_seq = excluded.last_seq, "
                "head = coalesce(excluded.head, run_heads.head)",
                (run_id, now, now, last, head),
            )
            return last

    def _events_read(self, run_id: str, after: int, limit: int) -> list[EventRow]:
        rows = self._read_added(
            "SELECT seq, at, event FROM run_events WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?",
            (run_id, after, limit),
        )
        return [(int(s), int(a), e) for s, a, e in rows]

    def _events_heads(self, run_id: str | None) -> list[HeadRow]:
        if run_id is None:
            rows = self._read_added(f"{_HEADS} ORDER BY created_at DESC, rowid DESC", ())
        else:
            rows = self._read_added(f"{_HEADS} WHERE run_id = ?", (run_id,))
        return [(r, int(c), int(u), int(s), h) for r, c, u, s, h in rows]

    def _events_live_runs(self) -> list[str]:
        rows = self._read_added("SELECT DISTINCT run_id FROM leases WHERE released = 0 AND expires_at > ?", (now_ms(),))
        return [r[0] for r in rows]

    def _inbox_post(self, run_id: str, kind: str, text: str, sender: str, question: str) -> tuple[int, int]:
        with self._transaction() as db:
            now = now_ms()
            cursor = db.execute(
                "INSERT INTO run_inbox (run_id, at, kind, text, sender, question) VALUES (?, ?, ?, ?, ?, ?)",
                (run_id, now, kind, text, sender, question),
            )
            return int(cursor.lastrowid or 0), now

    def _inbox_take(self, run_id: str) -> list[MessageRow]:
        waiting = "SELECT id, kind, text, sender, question, at FROM run_inbox WHERE run_id = ? AND taken_at IS NULL"
        # A run asks about twice a second: the plain read first, so an empty inbox never takes the write lock.
        if self.read_only or not self._read_added(waiting + " LIMIT 1", (run_id,)):
            return []
        with self._transaction() as db:
            rows = db.execute(waiting + " ORDER BY id", (run_id,)).fetchall()
            if rows:
                db.execute(
                    "UPDATE run_inbox SET taken_at = ? WHERE run_id = ? AND taken_at IS NULL AND id <= ?",
                    (now_ms(), run_id, rows[-1][0]),
                )
        return [(int(i), k, t, s, q, int(a)) for i, k, t, s, q, a in rows]
