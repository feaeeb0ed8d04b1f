"""`session_index`: the `SessionIndex` of any SDK session store, computed from its protocol where it has no answer.

Both stores answer from their indexes without reading payloads (`SqliteSessionStore`, `PostgresSessionStore`),
and the layers answer over **any** backend: they delegate each question the backend can answer itself and
compute the others from its SDK protocol methods (`session_index` does the same for a bare store).

The questions are synchronous, as they were when flower probed for them: they are short on our stores, and
their callers ask between steps. Over a backend that has only the async SDK protocol, each answer runs the
backend's coroutines on a private event loop in a helper thread — which works for stores whose coroutines
are not bound to the caller's event loop (in-memory stores, stores that open a connection per call or run
blocking I/O in worker threads). A store whose connections belong to one event loop (an asyncpg pool) should
implement the methods itself; the layers then delegate to it.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

import anyio

from .._shared.passthrough import implements
from .._shared.usage import usage_tokens
from ._protocol import QueryNotSupported, SessionIndex

if TYPE_CHECKING:
    from claude_agent_sdk import SessionKey

__all__ = ["run_sync", "session_index"]

T = TypeVar("T")


def session_index(store: object) -> SessionIndex:
    """The `SessionIndex` of any SDK session store: the store itself when it is one (ours, the layers), else a
    view that delegates what the store has and computes the rest from its ``load``/``list_sessions``."""
    if isinstance(store, SessionIndex):
        return store
    if not (callable(getattr(store, "append", None)) and callable(getattr(store, "load", None))):
        raise TypeError(
            f"session_index needs a session store (an object with async append() and load()), not {type(store).__name__}"
        )
    return _ComputedIndex(store)


def run_sync(work: Callable[[], Awaitable[T]]) -> T:
    """Run ``work()`` to completion on a private event loop in a helper thread, from any thread.

    A helper thread, because the caller may itself be inside a running event loop (the Runtime asks between
    messages), where no second loop can run.
    """
    results: list[T] = []
    errors: list[BaseException] = []

    def target() -> None:
        try:
            results.append(anyio.run(work))
        except BaseException as exc:  # noqa: BLE001 - handed to the calling thread, which raises it
            errors.append(exc)

    thread = threading.Thread(target=target, name="flower-stores-index", daemon=True)
    thread.start()
    thread.join()
    if errors:
        raise errors[0]
    return results[0]


class _ComputedIndex:
    """`SessionIndex` over a store that may have none of it: each question goes to the store's own method when
    it has one, else is computed from the SDK protocol (reading the transcript: O(its length), not an index
    lookup — fine between steps, not in a hot loop)."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend

    def _native(self, name: str) -> Callable[..., Any] | None:
        method = getattr(self.backend, name, None)
        return method if callable(method) else None

    @property
    def where(self) -> str:
        where = getattr(self.backend, "where", None)
        return where if isinstance(where, str) else type(self.backend).__name__

    def has_session(self, project_key: str, session_id: str) -> bool:
        native = self._native("has_session")
        if native is not None:
            return bool(native(project_key, session_id))
        return run_sync(lambda: self._has_session(project_key, session_id))

    async def _has_session(self, project_key: str, session_id: str) -> bool:
        if implements(self.backend, "list_sessions"):  # the store's own listing: no transcript read
            listed = await self.backend.list_sessions(project_key)
            return any(item.get("session_id") == session_id for item in listed)
        return await self.backend.load(_main(project_key, session_id)) is not None

    def has_entry(self, project_key: str, session_id: str, uuid: str) -> bool:
        native = self._native("has_entry")
        if native is not None:
            return bool(native(project_key, session_id, uuid))
        entries = run_sync(lambda: self.backend.load(_main(project_key, session_id)))
        return any(type(e) is dict and e.get("uuid") == uuid for e in entries or ())

    def last_context(self, project_key: str, session_id: str, scan: int = 60) -> int:
        native = self._native("last_context")
        if native is not None:
            return int(native(project_key, session_id, scan))
        entries = run_sync(lambda: self.backend.load(_main(project_key, session_id))) or []
        # As the stores do: the newest `scan` entries, newest first, the first non-zero usage.
        for entry in reversed(entries[max(0, len(entries) - max(0, int(scan))) :]):
            total = usage_tokens(entry)
            if total:
                return total
        return 0

    def counts(self, project_key: str | None = None) -> tuple[int, int]:
        native = self._native("counts")
        if native is not None:
            transcripts, entries = native() if project_key is None else native(project_key)
            return int(transcripts), int(entries)
        if project_key is not None:
            projects = [project_key]
        else:
            listed = self._native("projects")
            if listed is None:
                raise QueryNotSupported(
                    f"{self.where} cannot list its projects, so its transcripts cannot all be counted; "
                    "count one project (counts(project_key)) or give the store a projects() method"
                )
            projects = list(listed())
        if not implements(self.backend, "list_sessions"):
            raise QueryNotSupported(
                f"{self.where} cannot list its sessions (no list_sessions()), so its transcripts cannot be counted"
            )
        return run_sync(lambda: self._counts(projects))

    async def _counts(self, projects: list[str]) -> tuple[int, int]:
        """Every main and subagent transcript of ``projects``, loaded and counted: a diagnosis, not a hot path."""
        transcripts = entries = 0
        subkeys = implements(self.backend, "list_subkeys")
        for project in projects:
            for listed in await self.backend.list_sessions(project):
                main = _main(project, listed["session_id"])
                keys: list[SessionKey] = [main]
                if subkeys:
                    keys += [{**main, "subpath": sub} for sub in await self.backend.list_subkeys(main)]
                for key in keys:
                    loaded = await self.backend.load(key)
                    if loaded is not None:
                        transcripts += 1
                        entries += len(loaded)
        return transcripts, entries

    def __repr__(self) -> str:
        return f"session_index({self.backend!r})"


def _main(project_key: str, session_id: str) -> SessionKey:
    return {"project_key": project_key, "session_id": session_id}
