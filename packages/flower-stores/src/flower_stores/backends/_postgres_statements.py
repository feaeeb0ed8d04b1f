"""The PostgreSQL store's SQL, built once per schema: the append's one insert (plain or fenced by a lease), the
lease row read beside the server's clock, and every other statement the store runs."""

from __future__ import annotations

from typing import Any

from .._shared.errors import StoreError
from ..lease import LeaseRow

__all__ = ["LEASE_COLUMNS", "LOCK_SPACE", "NOW_MS", "Statements", "insert_sql", "lease_and_now"]

# Namespace of the advisory locks (the first key of the two-int form): "flwr" in ASCII.
LOCK_SPACE = 0x666C7772
NOW_MS = "(extract(epoch FROM clock_timestamp()) * 1000)::bigint"
LEASE_COLUMNS = "epoch, host, pid, run_id, acquired_at, renewed_at, expires_at, released"


def lease_and_now(row: Any) -> tuple[LeaseRow | None, int]:
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


def insert_sql(s: str, *, fenced: bool) -> str:
    """The append's insert (see ``Statements.insert``); ``fenced``: gated on the session's lease epoch."""
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


class Statements:
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
        self.insert = insert_sql(s, fenced=False)
        # The same, fenced by a lease: only while the session's stored epoch is the lease's (read in this very
        # statement, so in this transaction and under the session lock); otherwise nothing and no row returned.
        self.insert_fenced = insert_sql(s, fenced=True)
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
            f"SELECT {NOW_MS}, l.* FROM (SELECT 1) one LEFT JOIN "
            f"(SELECT {LEASE_COLUMNS} FROM {s}.leases WHERE project_key = %s AND session_id = %s"
        )
        self.lease_row_now = lease_row + ") l ON true"
        self.lease_row_now_for_update = lease_row + " FOR UPDATE) l ON true"
        self.write_lease = (
            f"INSERT INTO {s}.leases (project_key, session_id, {LEASE_COLUMNS}) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (project_key, session_id) DO UPDATE SET "
            + ", ".join(f"{c} = excluded.{c}" for c in LEASE_COLUMNS.split(", "))
        )
        # Run records: every write stamps the run (created once, updated always) in the same transaction.
        self.touch_run = (
            f"INSERT INTO {s}.runs AS r (run_id, created_at, updated_at) VALUES (%s, {NOW_MS}, {NOW_MS}) "
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
