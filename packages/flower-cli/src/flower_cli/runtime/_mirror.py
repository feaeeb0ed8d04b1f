"""The transcript mirror, watched: no step is recorded while the store lacks what the harness wrote.

The SDK mirrors every line Claude Code writes to its local JSONL into the session store. When an ``append``
fails it retries briefly, then drops the batch and carries on (a ``MirrorErrorMessage``, or nothing at all for
the final flush at teardown). `MirrorWatch` stands between the SDK and the store: it sees every failed append
(and keeps its entries), stops sending to a store that just failed (each try of a dead PostgreSQL costs the
pool's 30 s), and, before the step is recorded, `settle` imports what is missing — from the harness's local
transcript and the entries it kept — waiting for a store that is unreachable up to the offline limit. When the
store still cannot take them, `settle` returns the one line that says which store, why, where the local copy
is and the command that imports it later.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from claude_agent_sdk import MirrorErrorMessage
from claude_agent_sdk import SessionStore as SessionStoreProtocol

import flower_stores

from ._harness_files import UNSTORED, harness_projects_dir

if TYPE_CHECKING:
    from claude_agent_sdk import SessionKey, SessionStore, SessionStoreEntry

__all__ = ["UNSTORED", "MirrorWatch", "harness_projects_dir", "quiet_sdk_mirror_log"]


# The SDK's optional store methods: the watched store offers exactly those the store under it implements (the
# SDK tells an implemented one from the protocol's default by its class).
_OPTIONAL = ("list_sessions", "list_session_summaries", "delete", "list_subkeys")
# Words of an error that passes by itself (a server restarting, a lock held by another process), as opposed to
# one a person must fix (a full disk, a read-only file), which is not waited for.
_TRANSIENT = ("connect", "connection", "server", "timeout", "timed out", "locked", "busy", "unreachable")
_PERMANENT = ("disk is full", "no space left", "readonly", "read-only", "permission denied", "quota")


def quiet_sdk_mirror_log(write: Callable[[str], None]) -> None:
    """The SDK's ``[TranscriptMirrorBatcher] flush failed …`` records go to ``write`` (the harness log), not the
    terminal: flower says what a failed mirror means, once, in its own words."""
    logger = logging.getLogger("claude_agent_sdk._internal.transcript_mirror_batcher")
    if any(getattr(h, "_flower", False) for h in logger.handlers):
        return

    class _ToLog(logging.Handler):
        _flower = True

        def emit(self, record: logging.LogRecord) -> None:
            try:
                write(self.format(record))
            except Exception:  # noqa: BLE001 - a log that cannot be written must not break the mirror
                pass

    logger.addHandler(_ToLog(logging.DEBUG))
    logger.propagate = False


def _key_tuple(key: Any) -> tuple[str, str, str | None]:
    return (str(key.get("project_key")), str(key.get("session_id")), key.get("subpath"))


class _StoreDownError(RuntimeError):
    """An append not sent: the store failed a moment ago; `settle` catches up."""


class MirrorWatch:
    """One Runtime's watch over its store: wraps the store the SDK writes to and settles gaps at a launch's end.

    ``where``: the store as it may be shown; ``store_url``: what ``--store`` takes to reach it again (None when
    it is the run dir's default); ``spool``: where entries are kept when no local transcript holds them.
    """

    def __init__(
        self, store: SessionStore, *, where: str, store_url: str | None, spool: Path, offline_limit: float
    ) -> None:
        self.store = store
        # What appends and imports go through: ``store``, or the fenced view of the step's lease (see `wrapped`).
        self.target: SessionStore = store
        self.where = where
        self.store_url = store_url
        self.spool = spool
        self.offline_limit = offline_limit
        self._pending: dict[tuple[str, str, str | None], list[SessionStoreEntry]] = {}
        self._flagged: set[tuple[str, str]] = set()
        self.last_error: str | None = None
        self._down = False

    # --- during a launch ----------------------------------------------------------------------------

    def wrapped(self, target: SessionStore | None = None) -> SessionStore:
        """The store the SDK gets: ``target`` (default: the watched store; the Runtime gives the fenced view of the
        step's lease), its failed appends seen and kept. Imports at `settle` go through the same ``target``, so a
        superseded driver's entries are refused there too."""
        self.target = target if target is not None else self.store
        methods: dict[str, Any] = {}
        for name in _OPTIONAL:
            if getattr(type(self.store), name, None) is not getattr(SessionStoreProtocol, name, None):
                methods[name] = _passthrough(name)
        cls = type("WatchedSessionStore", (_Watched,), methods)
        return cls(self)  # type: ignore[no-any-return]

    def saw(self, message: Any) -> None:
        """A ``MirrorErrorMessage`` from the stream: its session needs settling even if no append failed here
        (the SDK timed the append out, or dropped a frame)."""
        if isinstance(message, MirrorErrorMessage):
            key: Any = message.key or {}
            if key.get("session_id"):
                self._flagged.add((str(key.get("project_key")), str(key.get("session_id"))))
            self.last_error = self.last_error or message.error or "the mirror reported an error"

    async def _append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        if self._down:
            self._keep(key, entries)
            raise _StoreDownError(self.last_error or "the store failed")
        try:
            await self.target.append(key, entries)
        except BaseException as exc:  # a timeout arrives as a cancellation: the batch may be lost all the same
            if _superseded(exc):
                raise  # another driver has the session: these entries are not the session's any more
            self._keep(key, entries)
            if isinstance(exc, Exception):
                self.last_error = _why(exc)
                self._down = True
            raise

    def _keep(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        k = _key_tuple(key)
        self._pending.setdefault(k, []).extend(entries)
        self._flagged.add((k[0], k[1]))

    # --- at a launch's end ----------------------------------------------------------------------------

    @property
    def troubled(self) -> bool:
        return bool(self._flagged)

    async def settle(self, say: Callable[[str], None]) -> str | None:
        """Make the store hold everything the harness wrote for the sessions whose mirror failed; None when it
        does (or nothing failed), else the one line saying why not and how to import it later."""
        if not self._flagged:
            return None
        started, said, pause = time.monotonic(), False, 0.5
        while True:
            try:
                await self._fill()
            except Exception as exc:  # noqa: BLE001 - any store failure is reported in the one line
                if _superseded(exc):
                    self._forget()
                    return None  # the step ends taken over (the lease says so); nothing of ours may be added
                why = _why(exc)
                waited = time.monotonic() - started
                if _transient(why) and waited < self.offline_limit:
                    if not said:
                        said = True
                        say(
                            f"the session store {self.where} is unreachable ({why}); the step waits for it "
                            f"(up to {_human(self.offline_limit)}) to store the transcript"
                        )
                    await anyio.sleep(min(pause, max(0.0, self.offline_limit - waited)))
                    pause = min(pause * 1.5, 5.0)
                    continue
                return self._unstored(why)
            if said:
                say(f"the session store {self.where} is back; the transcript is stored")
            self._forget()
            return None

    def _forget(self) -> None:
        self._pending.clear()
        self._flagged.clear()
        self._down = False
        self.last_error = None

    async def _fill(self) -> None:
        projects = harness_projects_dir()
        for project_key, session_id in sorted(self._flagged):
            local = projects / project_key / f"{session_id}.jsonl"
            if local.is_file():
                await flower_stores.import_transcript(self.target, project_key, session_id, local)
        for (project_key, session_id, subpath), entries in self._pending.items():
            key: SessionKey = {"project_key": project_key, "session_id": session_id}
            if subpath is not None:
                key["subpath"] = subpath
            await flower_stores.import_entries(self.target, key, entries)

    def _unstored(self, why: str) -> str:
        """The one line: which store, why, where the local copy is, the command that imports it."""
        projects = harness_projects_dir()
        missing = sum(len(v) for v in self._pending.values())
        parts: list[str] = []
        for project_key, session_id in sorted(self._flagged):
            local = projects / project_key / f"{session_id}.jsonl"
            copy = local if local.is_file() else self._spooled(project_key, session_id)
            store = f" --store {self.store_url}" if self.store_url else ""
            if copy is None:
                parts.append(f"session {session_id}: no local copy could be kept")
                continue
            parts.append(
                f"session {session_id}: the local copy is {copy}; once the store works, run "
                f"`flower sessions import {session_id}{store} --from {copy}`"
            )
        count = f"{missing} entr{'y' if missing == 1 else 'ies'} of " if missing else ""
        return f"{UNSTORED}: the session store {self.where} could not take {count}the transcript ({why}); " + "; ".join(
            parts
        )

    def _spooled(self, project_key: str, session_id: str) -> Path | None:
        """The kept entries of a session whose harness file is gone (a resumed session's temporary copy), laid
        out as the harness lays out its own (``<id>.jsonl``, ``<id>/subagents/…``); None if they cannot be
        written either."""
        main = self.spool / project_key / f"{session_id}.jsonl"
        try:
            for (pk, sid, subpath), entries in self._pending.items():
                if (pk, sid) != (project_key, session_id):
                    continue
                path = main if subpath is None else main.with_suffix("") / f"{subpath}.jsonl"
                path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                with path.open("a", encoding="utf-8") as handle:
                    for entry in entries:
                        handle.write(json.dumps(entry, ensure_ascii=False) + "\n")
        except OSError:
            return None
        return main if main.is_file() else None


class _Watched:
    """The SDK-facing store: ``append`` through the watch, ``load`` straight through."""

    def __init__(self, watch: MirrorWatch) -> None:
        self._watch = watch

    @property
    def target(self) -> SessionStore:
        """The store under the watch: the fenced view of the step's lease, or the Runtime's store."""
        return self._watch.target

    def __getattr__(self, name: str) -> Any:
        # What a caller asks of the store beyond appending and loading (its lease, ``read_lease``, ``where``) is the
        # target's. The SDK's optional methods are set on the class (see `MirrorWatch.wrapped`): the SDK probes
        # the class, which this does not touch.
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._watch.target, name)

    async def append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        await self._watch._append(key, entries)

    async def load(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        return await self._watch.target.load(key)


def _passthrough(name: str) -> Callable[..., Any]:
    async def method(self: _Watched, *args: Any, **kwargs: Any) -> Any:
        return await getattr(self._watch.target, name)(*args, **kwargs)

    method.__name__ = name
    return method


def _why(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 200 else text[:197] + "..."


def _transient(why: str) -> bool:
    lowered = why.lower()
    return not any(w in lowered for w in _PERMANENT) and any(w in lowered for w in _TRANSIENT)


def _human(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


def _superseded(exc: BaseException) -> bool:
    """Whether ``exc`` is the lease's fence refusing a driver another process has taken the session from."""
    return isinstance(exc, flower_stores.LeaseLost)
