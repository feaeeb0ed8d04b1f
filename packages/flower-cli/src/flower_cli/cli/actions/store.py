"""The session store a command uses: ``--store URL`` / ``FLOWER_STORE_URL``, else ``<run dir>/sessions.db``.

Exit codes for store trouble: a malformed URL is a usage mistake (2: fix the string you typed, like any bad
flag value; the global option checks that before anything runs, ``_global_options.py``); a well-formed URL that does not work — the server refuses, the password is wrong, the database
is missing, the ``postgres`` extra is not installed — is configuration (3: fix the environment, as with a
missing credential). Both are one line that says what to do.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Any

import flower_stores

from ..._shared.exits import Exit, ExitCode
from ..._shared.sizes import human_bytes
from ...runtime import explain

if TYPE_CHECKING:
    from ...view import Renderer
    from .._global_options import GlobalOptions

__all__ = ["check_store", "explained", "open_store", "sqlite_path", "store_label"]


def _sqlite_path(opts: GlobalOptions) -> Path | None:
    """The SQLite file the command would use, or None for a server store."""
    if not opts.store:
        return opts.run_dir / "sessions.db"

    return flower_stores.check_store_url(opts.store)


def store_label(opts: GlobalOptions) -> str:
    """Where the transcripts are, for messages (never a password)."""
    if not opts.store:
        return str(opts.run_dir / "sessions.db")

    return flower_stores.describe_store_url(opts.store)


def sqlite_path(opts: GlobalOptions) -> Path | None:
    """The SQLite file the command uses (named in SQLite's own errors, which do not say which file), or None."""
    try:
        return _sqlite_path(opts)
    except Exception:  # noqa: BLE001 - a malformed URL was refused by the global option already
        return None


def open_store(opts: GlobalOptions, *, read_only: bool = False) -> Any:
    """The bare backend (no layers); ``read_only`` for commands that only look (``flower sessions``).

    Store trouble is a one-line `Exit` (see `failures.explain`), never a traceback.
    """

    try:
        if opts.store:
            return flower_stores.store_from_url(opts.store, read_only=read_only)
        return flower_stores.SqliteSessionStore(opts.run_dir / "sessions.db", read_only=read_only)
    except Exception as exc:
        raise explained(exc, opts) from exc


def explained(exc: Exception, opts: GlobalOptions) -> Exception:
    """``exc`` as a one-line `Exit` when a user can fix it (a bad URL, an unusable store); ``exc`` otherwise."""

    known = explain(exc, store=sqlite_path(opts))
    return exc if known is None else Exit(*known)


def check_store(
    opts: GlobalOptions, view: Renderer, found: dict[str, Any] | None = None
) -> tuple[ExitCode, str] | None:
    """``flower doctor``'s store section: the store a run would use, reached and read; a problem or None.

    ``found`` (``--json``) receives what was seen: ``store``, ``exists``, ``transcripts``, ``entries``, ``error``.
    """
    seen: dict[str, Any] = found if found is not None else {}
    path = _sqlite_path(opts)
    if path is not None:
        seen["store"] = str(path)
        if not path.exists():
            seen["exists"] = False
            view.line(f"  - {path} does not exist yet (created by the first run)", "dim")
            return None
        seen["exists"] = True

        try:
            # The store answers for its own tables (read-only: doctor never writes), not raw SQL into them.
            with flower_stores.SqliteSessionStore(path, read_only=True) as sqlite_store:
                keys, entries = sqlite_store.counts()
                size = flower_stores.StoreUpkeep(sqlite_store).size()
        except (sqlite3.Error, flower_stores.StoreError) as exc:
            seen["error"] = f"{path} is not readable: {exc}"
            view.line(f"  x {path} is not readable: {exc}", "red")
            return ExitCode.CONFIG, f"{path} is not readable: {exc}"
        seen.update(transcripts=keys, entries=entries, **_size_fields(size))
        view.line(f"  + {path}: {keys} transcripts, {entries} entries, {_size_text(size)}", "green")
        return None

    assert opts.store is not None
    seen["store"] = flower_stores.describe_store_url(opts.store)
    try:
        with flower_stores.PostgresSessionStore(opts.store.strip()) as store:  # the global option checked it is one
            transcripts, entries = store.counts()
            size = flower_stores.StoreUpkeep(store).size()
    except flower_stores.StoreError as exc:  # a malformed URL never gets here: the global option checks it
        seen["error"] = str(exc)
        view.line(f"  x {exc}", "red")
        return ExitCode.CONFIG, str(exc)
    seen.update(exists=True, schema=store.schema, transcripts=transcripts, entries=entries, **_size_fields(size))
    view.line(
        f"  + {store.where} (schema {store.schema}): {transcripts} transcripts, {entries} entries, {_size_text(size)}",
        "green",
    )
    return None


def _size_fields(size: flower_stores.StoreSize) -> dict[str, int]:
    return {"size_bytes": size.total_bytes, "reclaimable_bytes": size.reclaimable_bytes}


def _size_text(size: flower_stores.StoreSize) -> str:
    """``12.3 MB`` and, when a compaction would give some back, how much and with what."""
    text = human_bytes(size.total_bytes)
    if size.reclaimable_bytes:
        text += f" ({human_bytes(size.reclaimable_bytes)} free: `flower sessions compact` gives it back)"
    return text
