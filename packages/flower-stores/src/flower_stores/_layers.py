"""`TrimmingSessionStore` and `PruningSessionStore`: load-time rewriting layered over *any* session store.

These wrap a backend instead of subclassing a store, so any backend will do: a path (then a
`SqliteSessionStore` is built), a store URL (``sqlite://…``, ``postgresql://…``: then that store is built, see
`store_from_url`) or any object implementing the SDK's ``SessionStore`` protocol (`InMemorySessionStore`,
Postgres, your Redis adapter). ``append`` and every optional method go straight through; only what ``load``
returns is rewritten, and the stored copy is never modified.

The SDK decides which optional methods a store has by probing (``getattr`` on the instance, then comparing
the class attribute with the protocol's ``NotImplementedError`` default — see ``_store_implements`` in the
SDK). A wrapper that defined all of them would claim, say, ``list_subkeys`` for a backend without it and
make every resume fail. So each wrapper instance is of a variant class that has exactly the optional
methods its backend has.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from os import PathLike
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import anyio.to_thread
from claude_agent_sdk import SessionKey, SessionStore, SessionStoreEntry

from ._engine import rewrite_once
from ._policies import EphemeralPolicy, PrunePolicy, TrimPolicy
from ._postgres import PostgresSessionStore
from ._report import LoadReport
from ._rewritten import Rewritten
from ._sqlite import SqliteSessionStore
from ._url import is_store_url, store_from_url

if TYPE_CHECKING:
    from claude_agent_sdk import SessionListSubkeysKey, SessionStoreListEntry, SessionSummaryEntry

__all__ = ["PruningSessionStore", "TrimmingSessionStore"]

OPTIONAL_METHODS = ("list_sessions", "list_session_summaries", "delete", "list_subkeys")
SYNC_HELPERS = ("projects", "has_session", "has_entry", "last_context")


def implements(store: Any, method: str) -> bool:
    """The SDK's own test: present, and not the protocol's ``NotImplementedError`` default."""
    if getattr(store, method, None) is None:
        return False
    return getattr(type(store), method, None) is not getattr(SessionStore, method, None)


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


class _HasSession:
    backend: Any

    def has_session(self, project_key: str, session_id: str) -> bool:
        return self.backend.has_session(project_key, session_id)  # type: ignore[no-any-return]


class _HasEntry:
    backend: Any

    def has_entry(self, project_key: str, session_id: str, uuid: str) -> bool:
        return self.backend.has_entry(project_key, session_id, uuid)  # type: ignore[no-any-return]


class _LastContext:
    backend: Any

    def last_context(self, project_key: str, session_id: str, scan: int = 60) -> int:
        return self.backend.last_context(project_key, session_id, scan)  # type: ignore[no-any-return]


_MIXINS: dict[str, type] = {
    "list_sessions": _ListSessions,
    "list_session_summaries": _ListSessionSummaries,
    "delete": _Delete,
    "list_subkeys": _ListSubkeys,
    "projects": _Projects,
    "has_session": _HasSession,
    "has_entry": _HasEntry,
    "last_context": _LastContext,
}


@functools.cache
def _variant(cls: type, capabilities: frozenset[str]) -> type:
    mixins = tuple(_MIXINS[name] for name in (*OPTIONAL_METHODS, *SYNC_HELPERS) if name in capabilities)
    if not mixins:
        return cls
    # Same name and module as the public class, so reprs and error messages read naturally.
    return type(cls.__name__, (cls, *mixins), {"__module__": cls.__module__, "__qualname__": cls.__qualname__})


def _capabilities(path_or_store: Any) -> frozenset[str]:
    if isinstance(path_or_store, (str, PathLike)):
        return frozenset((*OPTIONAL_METHODS, *SYNC_HELPERS))
    optional = {m for m in OPTIONAL_METHODS if implements(path_or_store, m)}
    helpers = {h for h in SYNC_HELPERS if callable(getattr(path_or_store, h, None))}
    return frozenset(optional | helpers)


class TrimmingSessionStore:
    """Expire stale glances and trim old large tool results on ``load``; everything else passes through.

    ``TrimmingSessionStore(path_or_store, workspace, policy=None, ephemeral=None)``: ``path_or_store`` is a
    ``sessions.db`` path, a store URL (``postgresql://…``, built and closed by the layer) or any SDK session
    store; ``workspace`` is the agent's working directory (spill files
    go under it). ``policy`` defaults to ``TrimPolicy()``, ``ephemeral`` to ``EphemeralPolicy()``.
    ``last_report`` describes the latest load (see `trim_report`).
    """

    backend: Any
    workspace: Path
    policy: TrimPolicy | None
    ephemeral: EphemeralPolicy | None
    prune_policy: PrunePolicy | None
    last_report: LoadReport

    if TYPE_CHECKING:  # present at runtime only when the backend has them (see the module docstring)

        async def list_sessions(self, project_key: str) -> list[SessionStoreListEntry]: ...
        async def list_session_summaries(self, project_key: str) -> list[SessionSummaryEntry]: ...
        async def delete(self, key: SessionKey) -> None: ...
        async def list_subkeys(self, key: SessionListSubkeysKey) -> list[str]: ...
        def projects(self) -> list[str]: ...
        def has_session(self, project_key: str, session_id: str) -> bool: ...
        def has_entry(self, project_key: str, session_id: str, uuid: str) -> bool: ...
        def last_context(self, project_key: str, session_id: str, scan: int = 60) -> int: ...

    def __new__(cls, path_or_store: Any, *args: Any, **kwargs: Any) -> TrimmingSessionStore:
        return super().__new__(_variant(cls, _capabilities(path_or_store)))  # type: ignore[arg-type]

    def __init__(
        self,
        path_or_store: str | PathLike[str] | Any,
        workspace: str | PathLike[str],
        policy: TrimPolicy | None = None,
        ephemeral: EphemeralPolicy | None = None,
    ) -> None:
        self._setup(
            path_or_store, workspace, trim_policy=policy or TrimPolicy(), ephemeral=ephemeral, prune_policy=None
        )

    def _setup(
        self,
        path_or_store: Any,
        workspace: str | PathLike[str],
        *,
        trim_policy: TrimPolicy | None,
        ephemeral: EphemeralPolicy | None,
        prune_policy: PrunePolicy | None,
    ) -> None:
        name = type(self).__name__
        if is_store_url(path_or_store):
            self.backend, self._owns_backend = store_from_url(path_or_store), True
        elif isinstance(path_or_store, (str, PathLike)):
            self.backend, self._owns_backend = SqliteSessionStore(path_or_store), True
        elif callable(getattr(path_or_store, "append", None)) and callable(getattr(path_or_store, "load", None)):
            self.backend, self._owns_backend = path_or_store, False
        else:
            raise TypeError(
                f"{name} needs a path to a sessions.db or a session store (an object with async append() and load()), "
                f"not {type(path_or_store).__name__}"
            )
        if not isinstance(workspace, (str, PathLike)):
            raise TypeError(
                f"{name}: workspace must be a path (the agent's working directory), not {type(workspace).__name__}"
            )
        self.workspace = Path(workspace).expanduser().resolve()
        self.policy = trim_policy
        self.ephemeral = ephemeral if ephemeral is not None else EphemeralPolicy()
        self.prune_policy = prune_policy
        self.last_report = LoadReport()

    # --- the protocol ---------------------------------------------------------------------------------

    async def append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        """Straight to the backend: the stored copy is always the full, unchanged transcript."""
        await self.backend.append(key, entries)

    async def load(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        """The backend's transcript, rewritten by this store's layers (in a worker thread)."""
        if type(self.backend) is SqliteSessionStore:
            # Our own store parses a fresh copy on every load and keeps no reference to it: the rewrite reads
            # each entry as it is parsed (while it is still in cache) and may edit that copy in place, all in
            # one worker thread. Any other backend (or a subclass) may hand out objects it still holds — its
            # stored copy must never change — so those are loaded first and rewritten by copying.
            result = await anyio.to_thread.run_sync(self._load_own, key)
        else:
            entries = await self.backend.load(key)
            # Our PostgreSQL store, like SQLite, parses a fresh copy per load and keeps no reference to it.
            owned = type(self.backend) is PostgresSessionStore
            result = None if entries is None else await anyio.to_thread.run_sync(self._rewrite, entries, owned)
        if result is None:
            self.last_report = LoadReport()  # never leave the previous load's report behind
            return None
        self.last_report = result.report
        return result.entries  # type: ignore[return-value]

    def _load_own(self, key: SessionKey) -> Rewritten | None:
        entries = self.backend.iter_entries(key)
        # Its unique index on (store_key, uid) means no two stored entries share a uuid.
        return None if entries is None else self._rewrite(entries, True, unique_uuids=True)

    def _rewrite(self, entries: Iterable[Any], owned: bool, unique_uuids: bool = False) -> Rewritten:
        return rewrite_once(
            entries,
            self.workspace,
            self.ephemeral,
            self.policy,
            self.prune_policy,
            owned=owned,
            unique_uuids=unique_uuids,
        )

    # --- lifetime -------------------------------------------------------------------------------------

    def close(self) -> None:
        """Close the backend if this store built it from a path; a store you passed in stays yours to close."""
        if self._owns_backend:
            self.backend.close()

    def __enter__(self) -> TrimmingSessionStore:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.backend!r}, {str(self.workspace)!r})"


class PruningSessionStore(TrimmingSessionStore):
    """The full set of load-time layers: expire → trim (when given a `TrimPolicy`) → prune → relink → heal.

    ``PruningSessionStore(path_or_store, workspace, policy=None, prune=None, ephemeral=None)``: ``policy`` is
    the `TrimPolicy` (``None``: no trimming), ``prune`` defaults to ``PrunePolicy()``, ``ephemeral`` to
    ``EphemeralPolicy()``. Pass the policies by keyword: the positional order differs from
    `TrimmingSessionStore`'s (kept as the original flower had it, see docs/compatibility.md).
    """

    def __init__(
        self,
        path_or_store: str | PathLike[str] | Any,
        workspace: str | PathLike[str],
        policy: TrimPolicy | None = None,
        prune: PrunePolicy | None = None,
        ephemeral: EphemeralPolicy | None = None,
    ) -> None:
        self._setup(
            path_or_store, workspace, trim_policy=policy, ephemeral=ephemeral, prune_policy=prune or PrunePolicy()
        )

    @property
    def pruned(self) -> int:
        """Entries the latest load removed."""
        return self.last_report.pruned

    @property
    def denials_dropped(self) -> int:
        """Denials the latest load removed."""
        return self.last_report.denials_dropped
