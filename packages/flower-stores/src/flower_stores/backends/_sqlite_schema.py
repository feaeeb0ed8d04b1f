"""The SQLite store's file: its schema, how it is opened (WAL, private, its clock), and the ``uid`` column's value."""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

__all__ = [
    "BUSY_TIMEOUT_S",
    "LEASE_COLUMNS",
    "PARAMS_PER_QUERY",
    "SCHEMA",
    "create_private",
    "now_ms",
    "uid_key",
    "wal",
]

SCHEMA = """
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
CREATE TABLE IF NOT EXISTS run_events (
    run_id  TEXT NOT NULL,
    seq     INTEGER NOT NULL,
    at      INTEGER NOT NULL,
    kind    TEXT NOT NULL,
    event   TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
CREATE TABLE IF NOT EXISTS run_heads (
    run_id     TEXT PRIMARY KEY,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    last_seq   INTEGER NOT NULL,
    head       TEXT
);
CREATE TABLE IF NOT EXISTS run_inbox (
    id       INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id   TEXT NOT NULL,
    at       INTEGER NOT NULL,
    kind     TEXT NOT NULL,
    text     TEXT NOT NULL,
    sender   TEXT NOT NULL DEFAULT '',
    question TEXT NOT NULL DEFAULT '',
    taken_at INTEGER
);
CREATE INDEX IF NOT EXISTS run_inbox_waiting ON run_inbox(run_id) WHERE taken_at IS NULL;
"""
# (Every statement is IF NOT EXISTS and runs on each writable open: a sessions.db from an older release — or
# the original's — gains the tables added since, e.g. `leases`, the run records' `runs`, `run_rows`,
# `run_lineage`, or the run log's `run_events`, `run_heads`, `run_inbox`, the first time a writer opens it.)

LEASE_COLUMNS = "epoch, host, pid, run_id, acquired_at, renewed_at, expires_at, released"

# A writer waits this long for another process's transaction before giving up. Appends are small and quick;
# a long wait means something is badly wrong, and the SDK retries a failed batch anyway.
BUSY_TIMEOUT_S = 30.0


def wal(db: sqlite3.Connection) -> str:
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
PARAMS_PER_QUERY = 900


def uid_key(uid: str) -> str | bytes:
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


def now_ms() -> int:
    """The SQLite store's clock: this machine's wall clock (every process sharing the file runs on it)."""
    return int(time.time() * 1000)


def create_private(path: Path) -> None:
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
