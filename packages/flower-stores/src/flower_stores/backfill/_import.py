"""Fill a store's gaps from a session's local JSONL transcript: what the harness wrote that the store lacks.

Claude Code writes every transcript line to ``<config dir>/projects/<project key>/<session id>.jsonl`` (its
workers' to ``<session id>/subagents/agent-<id>.jsonl`` beside it) and mirrors the same lines to the SDK's
``SessionStore``. When the store could not take a batch, the SDK drops it; the file still has it. Importing
appends, per transcript, only the entries the store does not hold — by ``uuid``, or for an entry without one
by its exact content — so running it twice adds nothing, on any SDK ``SessionStore``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from .._shared.passthrough import Wrapper
from ..lease import FencedSessionStore

if TYPE_CHECKING:
    from claude_agent_sdk import SessionKey, SessionStore, SessionStoreEntry

__all__ = ["ImportReport", "import_entries", "import_transcript", "transcript_files"]


@dataclass
class ImportReport:
    """What `import_transcript` did: entries read from the files, entries added to the store, per transcript."""

    read: int = 0
    added: int = 0
    files: list[Path] = field(default_factory=list)
    skipped_lines: int = 0  # lines that were not JSON (a line cut short by a crash or a full disk)


def transcript_files(path: Path | str) -> list[tuple[Path, str | None]]:
    """The main transcript ``path`` (``<session id>.jsonl``) and its workers' files, each with its subpath
    (None for the main one; ``subagents/agent-<id>`` as the SDK keys them)."""
    main = Path(path)
    found: list[tuple[Path, str | None]] = [(main, None)] if main.is_file() else []
    side = main.with_suffix("")  # <session id>/ beside <session id>.jsonl
    if side.is_dir():
        for file in sorted(side.rglob("*.jsonl")):
            found.append((file, file.relative_to(side).with_suffix("").as_posix()))
    return found


def _read(file: Path, report: ImportReport) -> list[SessionStoreEntry]:
    entries: list[SessionStoreEntry] = []
    with file.open(encoding="utf-8", errors="surrogateescape") as handle:
        for line in handle:
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
            except ValueError:
                report.skipped_lines += 1
                continue
            if isinstance(entry, dict):
                entries.append(cast("SessionStoreEntry", entry))
            else:
                report.skipped_lines += 1
    return entries


def _identity(entry: Any) -> str:
    uid = entry.get("uuid") if isinstance(entry, dict) else None
    if isinstance(uid, str) and uid:
        return "u:" + uid
    return "c:" + json.dumps(entry, sort_keys=True, ensure_ascii=False)


def _raw(store: Any) -> Any:
    """The stored copy, not a load-time rewrite: flower-stores' layers keep their backend unchanged. A fenced
    view over a layer stays fenced: its appends still need the lease, its loads read the stored copy (else an
    entry the layer hides at load would look missing and be appended again)."""
    if isinstance(store, FencedSessionStore):
        inner = store.backend
        return FencedSessionStore(inner.backend, store.lease) if _rewrites_loads(inner) else store
    return store.backend if _rewrites_loads(store) else store


def _rewrites_loads(store: Any) -> bool:
    """A layer (`TrimmingSessionStore`, `PruningSessionStore`): its loads are rewritten, its backend holds the copy."""
    return isinstance(store, Wrapper) and store.rewrites_loads


async def import_transcript(store: SessionStore, project_key: str, session_id: str, path: Path | str) -> ImportReport:
    """Append to ``store`` every entry of the local transcript ``path`` (and its workers' files) it lacks.

    ``path`` is the session's ``<session id>.jsonl``: under Claude Code's config dir
    (``$CLAUDE_CONFIG_DIR``, default ``~/.claude``) at ``projects/<project key>/<session id>.jsonl``, or a
    copy laid out the same way. Entries are compared by ``uuid`` (by content when they have none) with what
    the store holds, and the missing ones are appended in the file's order, so a second run adds nothing.
    Raises ``FileNotFoundError`` when ``path`` does not exist; the store's own error when it cannot take them.
    """
    files = transcript_files(path)
    if not files:
        raise FileNotFoundError(2, "no such transcript", str(path))
    report = ImportReport()
    raw = _raw(store)
    for file, subpath in files:
        entries = _read(file, report)
        report.read += len(entries)
        report.files.append(file)
        if not entries:
            continue
        key: SessionKey = {"project_key": project_key, "session_id": session_id}
        if subpath is not None:
            key["subpath"] = subpath
        report.added += await import_entries(raw, key, entries)
    return report


async def import_entries(store: SessionStore, key: SessionKey, entries: list[SessionStoreEntry]) -> int:
    """Append to ``store`` under ``key`` those of ``entries`` it does not hold (by ``uuid``, else by content),
    in their order; returns how many were added. Idempotent: a second call adds nothing."""
    if not entries:
        return 0
    raw = _raw(store)
    held = {_identity(e) for e in (await raw.load(key) or [])}
    missing: list[SessionStoreEntry] = []
    for entry in entries:
        ident = _identity(entry)
        if ident not in held:
            held.add(ident)  # an entry repeated in the input is added once
            missing.append(entry)
    if missing:
        await raw.append(key, missing)
    return len(missing)
