"""`SessionLeases`: the five lease methods, declared once. Both backends (through `LeaseMethods`), the layers
and the fenced view over them (through `LeasesThrough`), and any store of yours with these methods conform."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

from ._model import DEFAULT_LEASE_TTL, Lease, LeaseOwner

if TYPE_CHECKING:
    from claude_agent_sdk import SessionKey, SessionStoreEntry

__all__ = ["SessionLeases"]


@runtime_checkable
class SessionLeases(Protocol):
    """A store that grants session leases and fences appends with them: both flower-stores backends, the layers
    over them, and any store of yours with these five methods. Wrap one in `FencedSessionStore` (ours also have
    ``fenced(lease)``) to give the SDK a store whose appends to the leased session are fenced."""

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
