"""`SqliteSessionStore`: the SDK's SessionStore protocol on one SQLite file that several processes share.

Concurrency model (why it is safe for parallel runs in one run dir):

- WAL journal, so readers never block the writer and the writer never blocks readers;
- every append is one ``BEGIN IMMEDIATE`` transaction: it takes the database's write lock *before* it reads
  ``meta.next_seq`` and the already-stored uuids, so two processes can never hand out the same ``seq`` or
  both insert the same uuid — ``seq`` stays contiguous per key and nothing is lost or duplicated;
- a busy timeout makes a writer wait for the lock instead of failing while another process commits.

All SQLite work runs in a worker thread (anyio), one connection per thread, so a 20 MB load never blocks the
event loop and two loads in one process do not wait for each other.

The file and its connections are `SqliteConnection` (``_sqlite_connection``), the lease and run-record
primitives `SqliteRecords` (``_sqlite_records``); this class is the SDK protocol and flower's queries on them.

``read_only=True`` opens an existing file for inspection (``flower analyze``, ``flower sessions``): no directory
is created, no schema written, no journal mode set, and every write raises `StoreError`.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

import anyio.to_thread

from .._shared.json_text import dumps
from ..lease import Lease
from ._keys import prefix_range, store_key
from ._payloads import context_tokens, parsed
from ._sqlite_events import SqliteEvents
from ._sqlite_records import SqliteRecords
from ._sqlite_schema import PARAMS_PER_QUERY, uid_key
from ._summary import fold_summary

if TYPE_CHECKING:
    from claude_agent_sdk import (
        SessionKey,
        SessionListSubkeysKey,
        SessionStoreEntry,
        SessionStoreListEntry,
        SessionSummaryEntry,
    )

__all__ = ["SqliteSessionStore"]


class SqliteSessionStore(SqliteRecords, SqliteEvents):
    """A `claude_agent_sdk.SessionStore` on one SQLite file (the seed's ``sessions.db`` schema).

    Implements the whole protocol (``append``, ``load``, ``list_sessions``, ``list_session_summaries``,
    ``delete``, ``list_subkeys``), the `SessionIndex` questions (``has_session()``, ``has_entry()``,
    ``last_context()``, ``counts()``, ``where``) plus ``projects()``, and the session lease (`SessionLeases`:
    ``acquire_lease()`` … ``fenced(lease)``), runs' records (`RunRecords`) and their published events and inboxes
    (`RunEventLog`, `RunInbox`). Use it as ``ClaudeAgentOptions(session_store=store)``; close it
    with ``close()`` or a ``with`` block.
    """

    def __repr__(self) -> str:
        return f"SqliteSessionStore({str(self.path)!r})"

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
            key_uid = uid_key(uid) if type(uid) is str else None
            if key_uid is not None:
                if key_uid in seen:
                    continue
                seen.add(key_uid)
            batch.append((key_uid, dumps(entry), entry))
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
        for start in range(0, len(pending), PARAMS_PER_QUERY):
            chunk = pending[start : start + PARAMS_PER_QUERY]
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
            (key["project_key"], key["session_id"], now, dumps(folded["data"])),
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
        low, high = prefix_range(project_key + "/")
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
                low, high = prefix_range(k + "/")
                db.execute("DELETE FROM entries WHERE store_key >= ? AND store_key < ?", (low, high))
                db.execute("DELETE FROM meta WHERE store_key >= ? AND store_key < ?", (low, high))
                db.execute(
                    "DELETE FROM summaries WHERE project_key = ? AND session_id = ?",
                    (key["project_key"], key["session_id"]),
                )

    async def list_subkeys(self, key: SessionListSubkeysKey) -> list[str]:
        return await anyio.to_thread.run_sync(self._list_subkeys, key)

    def _list_subkeys(self, key: SessionListSubkeysKey) -> list[str]:
        low, high = prefix_range(store_key(key) + "/")
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
            .execute("SELECT 1 FROM entries WHERE store_key = ? AND uid = ? LIMIT 1", (k, uid_key(uuid)))
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
            params = prefix_range(project_key + "/")
        row = self._connection().execute(query, params).fetchone()
        return (int(row[0]), int(row[1])) if row else (0, 0)
