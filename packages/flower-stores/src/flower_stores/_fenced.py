"""`FencedSessionStore`: the store to give the SDK while a process holds a session's lease.

The SDK calls ``store.append(key, entries)`` with no lease in sight, so the lease travels in the store object:
this view sends every append to the leased session — its main transcript and its subagent transcripts — to
the backend's ``append_fenced``, which checks the epoch inside the append's own write transaction and raises
`LeaseLost` (writing nothing) once another owner has taken the session over. Appends to other sessions, loads
and everything else go to the backend unchanged — over a layer, its loads are still rewritten.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from claude_agent_sdk import SessionKey, SessionStoreEntry

from ._lease import DEFAULT_LEASE_TTL, Lease, LeaseOwner, SessionLeases
from ._passthrough import capabilities, variant
from ._report import LoadReport

if TYPE_CHECKING:
    from claude_agent_sdk import SessionListSubkeysKey, SessionStoreListEntry, SessionSummaryEntry

__all__ = ["FencedSessionStore"]


class FencedSessionStore:
    """A view of ``store`` whose appends to ``lease``'s session are fenced by that lease.

    ``FencedSessionStore(store, lease)`` (or ``store.fenced(lease)``): ``store`` grants leases (a
    `SqliteSessionStore`, a `PostgresSessionStore`, a layer over either, or any `SessionLeases`). Use it as
    ``ClaudeAgentOptions(session_store=view)``. It has exactly the optional methods of ``store`` (the SDK
    probes for them), its `SessionIndex` questions and lease methods when ``store`` has them, and owns
    nothing: closing stays with whoever opened ``store``.
    """

    backend: Any
    lease: Lease

    if TYPE_CHECKING:  # present at runtime only when the backend has them (see _passthrough)

        async def list_sessions(self, project_key: str) -> list[SessionStoreListEntry]: ...
        async def list_session_summaries(self, project_key: str) -> list[SessionSummaryEntry]: ...
        async def delete(self, key: SessionKey) -> None: ...
        async def list_subkeys(self, key: SessionListSubkeysKey) -> list[str]: ...
        def projects(self) -> list[str]: ...
        @property
        def where(self) -> str: ...
        def has_session(self, project_key: str, session_id: str) -> bool: ...
        def has_entry(self, project_key: str, session_id: str, uuid: str) -> bool: ...
        def last_context(self, project_key: str, session_id: str, scan: int = 60) -> int: ...
        def counts(self, project_key: str | None = None) -> tuple[int, int]: ...
        async def acquire_lease(
            self,
            project_key: str,
            session_id: str,
            owner: LeaseOwner,
            *,
            ttl: float = DEFAULT_LEASE_TTL,
            epoch: int | None = None,
        ) -> Lease: ...
        async def renew_lease(self, lease: Lease, *, ttl: float | None = None) -> Lease: ...
        async def release_lease(self, lease: Lease) -> bool: ...
        async def read_lease(self, project_key: str, session_id: str) -> Lease | None: ...
        async def append_fenced(self, key: SessionKey, entries: list[SessionStoreEntry], *, lease: Lease) -> None: ...
        def fenced(self, lease: Lease) -> FencedSessionStore: ...

    def __new__(cls, store: SessionLeases, lease: Lease) -> FencedSessionStore:
        # Not the run records: the lease fences a session's transcript, and the view does not claim to fence more.
        return super().__new__(variant(cls, capabilities(store, index=True) - {"runs"}))  # type: ignore[arg-type]

    def __init__(self, store: SessionLeases, lease: Lease) -> None:
        if not isinstance(store, SessionLeases):
            raise TypeError(
                f"FencedSessionStore needs a store that grants leases (SqliteSessionStore, PostgresSessionStore or a "
                f"layer over one), not {type(store).__name__}"
            )
        if not isinstance(lease, Lease):
            raise TypeError(f"FencedSessionStore needs the Lease that acquire_lease returned, not {lease!r}")
        self.backend = store
        self.lease = lease

    async def append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        """Fenced for the leased session (raises `LeaseLost`, nothing written, once it was taken over)."""
        if self.lease.covers(key):
            await self.backend.append_fenced(key, entries, lease=self.lease)
        else:
            await self.backend.append(key, entries)

    async def load(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        return await self.backend.load(key)  # type: ignore[no-any-return]

    @property
    def last_report(self) -> LoadReport:
        """The backend's latest load report (a layer's), so `trim_report` works on the view too."""
        report = getattr(self.backend, "last_report", None)
        return report if isinstance(report, LoadReport) else LoadReport()

    def __repr__(self) -> str:
        return f"FencedSessionStore({self.backend!r}, epoch={self.lease.epoch})"
