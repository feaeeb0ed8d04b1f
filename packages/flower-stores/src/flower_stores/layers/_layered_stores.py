"""`TrimmingSessionStore` and `PruningSessionStore`: load-time rewriting layered over *any* session store.

These wrap a backend instead of subclassing a store, so any backend will do: a path (then a
`SqliteSessionStore` is built), a store URL (``sqlite://…``, ``postgresql://…``: then that store is built, see
`store_from_url`) or any object implementing the SDK's ``SessionStore`` protocol (`InMemorySessionStore`,
Postgres, your Redis adapter). ``append`` and every optional method go straight through; only what ``load``
returns is rewritten, and the stored copy is never modified.

The SDK probes a store for its optional methods, so a layer has exactly the optional methods of its backend
(see ``flower_stores._shared.passthrough``), the lease methods when the backend grants leases, the `RunEventLog` / `RunInbox` methods and the `RunRecords` methods when
it keeps run records. The `SessionIndex` questions
(``has_session``, ``has_entry``, ``last_context``, ``counts``, ``where``) are always there: delegated to a
backend that answers them, computed from its SDK protocol otherwise (see `session_index`).
"""

from __future__ import annotations

from collections.abc import Iterable
from os import PathLike
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self, cast

import anyio.to_thread

from .._shared.passthrough import ALL_SDK_MIXINS, SdkMethodsThrough, Wrapper, has_all, sdk_mixins, variant
from ..backends import PostgresSessionStore, SqliteSessionStore, is_store_url, store_from_url
from ..events import RunEventsThrough
from ..index import SessionIndex, session_index
from ..lease import LeasesThrough
from ..report import LoadReport, Rewritten
from ..rewrite import EphemeralPolicy, PrunePolicy, TrimPolicy, rewrite_once
from ..runs import RunRecordsThrough

if TYPE_CHECKING:
    from claude_agent_sdk import SessionKey, SessionStoreEntry

__all__ = ["PruningSessionStore", "TrimmingSessionStore"]


def _mixins(path_or_store: Any) -> tuple[type, ...]:
    """What a layer over ``path_or_store`` passes through: exactly what the backend has."""
    if isinstance(path_or_store, (str, PathLike)):  # a path or URL: we build one of our stores, which has all
        return (*ALL_SDK_MIXINS, LeasesThrough, RunRecordsThrough, RunEventsThrough)
    return (
        *sdk_mixins(path_or_store),
        *((LeasesThrough,) if has_all(path_or_store, LeasesThrough) else ()),
        *((RunRecordsThrough,) if has_all(path_or_store, RunRecordsThrough) else ()),
        *((RunEventsThrough,) if has_all(path_or_store, RunEventsThrough) else ()),
    )


if TYPE_CHECKING:

    class _MayPresent(SdkMethodsThrough, LeasesThrough, RunRecordsThrough, RunEventsThrough):
        """What a type checker is told a layer has; at run time each is there only when the backend has it."""

else:
    _MayPresent = object


class TrimmingSessionStore(Wrapper, _MayPresent):
    """Expire stale glances and trim old large tool results on ``load``; everything else passes through.

    ``TrimmingSessionStore(path_or_store, workspace, policy=None, ephemeral=None)``: ``path_or_store`` is a
    ``sessions.db`` path, a store URL (``postgresql://…``, built and closed by the layer) or any SDK session
    store; ``workspace`` is the agent's working directory (spill files
    go under it). ``policy`` defaults to ``TrimPolicy()``, ``ephemeral`` to ``EphemeralPolicy()``.
    ``last_report`` describes the latest load (see `trim_report`).
    """

    rewrites_loads = True  # what `import_transcript` looks beneath: the stored copy is the backend's
    workspace: Path
    policy: TrimPolicy | None
    ephemeral: EphemeralPolicy | None
    prune_policy: PrunePolicy | None
    last_report: LoadReport

    def __new__(cls, path_or_store: Any, *args: Any, **kwargs: Any) -> Self:
        return super().__new__(variant(cls, _mixins(path_or_store)))

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
        self._index: SessionIndex = session_index(self.backend)

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
        return cast("list[SessionStoreEntry]", result.entries)  # entries in, entries out: only their content changed

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

    # --- SessionIndex: the backend's answers, or computed from its protocol methods (see session_index) -----

    @property
    def where(self) -> str:
        """The backend's ``where`` (a path, a server); its class name when it has none."""
        return self._index.where

    def has_session(self, project_key: str, session_id: str) -> bool:
        """Whether the main transcript exists (over a bare SDK store: listed by ``list_sessions``, or loads)."""
        return self._index.has_session(project_key, session_id)

    def has_entry(self, project_key: str, session_id: str, uuid: str) -> bool:
        """Whether the main transcript holds an entry with this ``uuid`` (the stored copy, not the rewritten one)."""
        return self._index.has_entry(project_key, session_id, uuid)

    def last_context(self, project_key: str, session_id: str, scan: int = 60) -> int:
        """Input + cache-read + cache-creation tokens of the latest model call among the last ``scan`` entries."""
        return self._index.last_context(project_key, session_id, scan)

    def counts(self, project_key: str | None = None) -> tuple[int, int]:
        """``(transcripts, entries)`` stored (subagent transcripts included), in the store or in one project.

        Over a bare SDK store this loads every transcript, and counting the whole store needs its
        ``projects()``: without one it raises `QueryNotSupported` — count one project instead.
        """
        return self._index.counts(project_key)

    # --- lifetime -------------------------------------------------------------------------------------

    def close(self) -> None:
        """Close the backend if this store built it from a path; a store you passed in stays yours to close."""
        if self._owns_backend:
            self.backend.close()

    def __enter__(self) -> Self:
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
