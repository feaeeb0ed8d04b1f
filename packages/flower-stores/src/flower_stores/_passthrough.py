"""Wrappers that present exactly the methods of the store they wrap (the layers, the fenced view).

The SDK decides which optional methods a store has by probing (``getattr`` on the instance, then comparing
the class attribute with the protocol's ``NotImplementedError`` default — see ``_store_implements`` in the
SDK). A wrapper that defined all of them would claim, say, ``list_subkeys`` for a backend without it and
make every resume fail. So each wrapper instance is of a variant class that has exactly the optional
methods its backend has: one mixin per capability, each passing the call straight to ``self.backend``.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from ._index import implements
from ._lease import DEFAULT_LEASE_TTL, Lease, LeaseOwner
from ._runs import RUNS

if TYPE_CHECKING:
    from claude_agent_sdk import (
        SessionKey,
        SessionListSubkeysKey,
        SessionStoreEntry,
        SessionStoreListEntry,
        SessionSummaryEntry,
    )

    from ._fenced import FencedSessionStore

__all__ = ["INDEX", "LEASES", "OPTIONAL_METHODS", "RUNS", "capabilities", "variant"]

OPTIONAL_METHODS = ("list_sessions", "list_session_summaries", "delete", "list_subkeys")
INDEX = ("where", "has_session", "has_entry", "last_context", "counts")
LEASES = ("acquire_lease", "renew_lease", "release_lease", "read_lease", "append_fenced")


class _ListSessions:
    backend: Any

    async def list_sessions(self, project_key: str) -> list[SessionStoreListEntry]:
        return await self.backend.list_sessions(project_key)  # type: ignore[no-any-return]


class _ListSessionSummaries:
    backend: Any

    async def list_session_summaries(self, project_key: str) -> list[SessionSummaryEntry]:
        return await self.backend.list_session_summaries(project_key)  # type: ignore[no-any-return]


class _Delete:
    backend: Any

    async def delete(self, key: SessionKey) -> None:
        await self.backend.delete(key)


class _ListSubkeys:
    backend: Any

    async def list_subkeys(self, key: SessionListSubkeysKey) -> list[str]:
        return await self.backend.list_subkeys(key)  # type: ignore[no-any-return]


class _Projects:
    backend: Any

    def projects(self) -> list[str]:
        return self.backend.projects()  # type: ignore[no-any-return]


class _Index:
    """The `SessionIndex` questions, straight to a backend that answers them all."""

    backend: Any

    @property
    def where(self) -> str:
        return self.backend.where  # type: ignore[no-any-return]

    def has_session(self, project_key: str, session_id: str) -> bool:
        return self.backend.has_session(project_key, session_id)  # type: ignore[no-any-return]

    def has_entry(self, project_key: str, session_id: str, uuid: str) -> bool:
        return self.backend.has_entry(project_key, session_id, uuid)  # type: ignore[no-any-return]

    def last_context(self, project_key: str, session_id: str, scan: int = 60) -> int:
        return self.backend.last_context(project_key, session_id, scan)  # type: ignore[no-any-return]

    def counts(self, project_key: str | None = None) -> tuple[int, int]:
        return self.backend.counts(project_key)  # type: ignore[no-any-return]


class _Leases:
    """The `SessionLeases` methods, straight to the backend; ``fenced`` builds a view over *this* wrapper, so
    its loads still go through whatever this wrapper does to them (the layers' rewriting)."""

    backend: Any

    async def acquire_lease(
        self,
        project_key: str,
        session_id: str,
        owner: LeaseOwner,
        *,
        ttl: float = DEFAULT_LEASE_TTL,
        epoch: int | None = None,
    ) -> Lease:
        return await self.backend.acquire_lease(project_key, session_id, owner, ttl=ttl, epoch=epoch)  # type: ignore[no-any-return]

    async def renew_lease(self, lease: Lease, *, ttl: float | None = None) -> Lease:
        return await self.backend.renew_lease(lease, ttl=ttl)  # type: ignore[no-any-return]

    async def release_lease(self, lease: Lease) -> bool:
        return await self.backend.release_lease(lease)  # type: ignore[no-any-return]

    async def read_lease(self, project_key: str, session_id: str) -> Lease | None:
        return await self.backend.read_lease(project_key, session_id)  # type: ignore[no-any-return]

    async def append_fenced(self, key: SessionKey, entries: list[SessionStoreEntry], *, lease: Lease) -> None:
        await self.backend.append_fenced(key, entries, lease=lease)

    def fenced(self, lease: Lease) -> FencedSessionStore:
        from ._fenced import FencedSessionStore

        return FencedSessionStore(self, lease)


class _Runs:
    """The `RunRecords` methods, straight to the backend (run records are not transcripts: no layer rewrites them)."""

    backend: Any

    async def put_run_rows(self, run_id: str, rows: list[dict[str, Any]]) -> None:
        await self.backend.put_run_rows(run_id, rows)

    def run_rows(self, run_id: str) -> list[dict[str, Any]]:
        return self.backend.run_rows(run_id)  # type: ignore[no-any-return]

    async def put_lineage(self, run_id: str, step: str, session_id: str) -> None:
        await self.backend.put_lineage(run_id, step, session_id)

    def lineage(self, run_id: str) -> dict[str, str]:
        return self.backend.lineage(run_id)  # type: ignore[no-any-return]

    def run_ids(self) -> list[str]:
        return self.backend.run_ids()  # type: ignore[no-any-return]


_MIXINS: dict[str, type] = {
    "list_sessions": _ListSessions,
    "list_session_summaries": _ListSessionSummaries,
    "delete": _Delete,
    "list_subkeys": _ListSubkeys,
    "projects": _Projects,
    "index": _Index,
    "leases": _Leases,
    "runs": _Runs,
}


def capabilities(store: Any, *, index: bool = False) -> frozenset[str]:
    """What ``store`` offers a wrapper to pass through: its SDK optional methods, ``projects``, ``leases`` when it
    has every lease method, ``runs`` when it has every `RunRecords` method, and (``index=True``) ``index`` when it answers every `SessionIndex` question."""
    found = {m for m in OPTIONAL_METHODS if implements(store, m)}
    if callable(getattr(store, "projects", None)):
        found.add("projects")
    if all(callable(getattr(store, m, None)) for m in LEASES):
        found.add("leases")
    if all(callable(getattr(store, m, None)) for m in RUNS):
        found.add("runs")
    if (
        index
        and isinstance(getattr(store, "where", None), str)
        and all(callable(getattr(store, m, None)) for m in INDEX[1:])
    ):
        found.add("index")
    return frozenset(found)


@functools.cache
def variant(cls: type, caps: frozenset[str]) -> type:
    """``cls`` with the mixins of ``caps``: the class a wrapper instance of that backend is made of."""
    mixins = tuple(mixin for name, mixin in _MIXINS.items() if name in caps)
    if not mixins:
        return cls
    # Same name and module as the public class, so reprs and error messages read naturally.
    return type(cls.__name__, (cls, *mixins), {"__module__": cls.__module__, "__qualname__": cls.__qualname__})
