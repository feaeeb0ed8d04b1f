"""The lease API of our two backends, on the three primitives each supplies (see `_rules` for the rules).

A backend implements ``_lease_write`` (read the session's lease row, read the storage clock, write what the
decision returns — all in one write transaction that excludes that session's appends), ``_lease_read`` and
``_append_sync(key, entries, lease)`` (its append, with the fence checked inside the transaction). Everything
else — the rules, validation, the async surface in worker threads — is here, once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import anyio.to_thread

from .._shared.errors import StoreError
from ._fenced import Fences
from ._model import DEFAULT_LEASE_TTL, Lease, LeaseError, LeaseOwner, LeaseRow
from ._protocol import SessionLeases
from ._rules import Decision, acquire_decision, check_owner, release_decision, renew_decision, ttl_ms

if TYPE_CHECKING:
    from claude_agent_sdk import SessionKey, SessionStoreEntry

__all__ = ["LeaseMethods"]

T = TypeVar("T")


class LeaseMethods(Fences):
    """`SessionLeases` for a backend that supplies ``_lease_write``, ``_lease_read`` and a fenced ``_append_sync``."""

    def _lease_write(self, project_key: str, session_id: str, decide: Decision) -> LeaseRow | None:
        raise NotImplementedError

    def _lease_read(self, project_key: str, session_id: str) -> tuple[LeaseRow | None, int]:
        """The stored row (None if the session was never leased) and the storage clock, in epoch ms."""
        raise NotImplementedError

    def _append_sync(self, key: SessionKey, entries: Sequence[SessionStoreEntry], lease: Lease | None) -> None:
        raise NotImplementedError

    async def _in_thread(self, call: Callable[..., T], *args: Any) -> T:
        """``call(*args)`` in a worker thread; a driver's own error (a full disk, a dropped connection) becomes a
        `StoreError` that says so, so callers that keep a lease renewed can tell "cannot answer now" from
        `LeaseLost`."""
        try:
            return await anyio.to_thread.run_sync(call, *args)
        except (LeaseError, StoreError):
            raise
        except Exception as exc:
            raise StoreError(f"the session store could not read or write the lease: {exc}") from exc

    async def acquire_lease(
        self,
        project_key: str,
        session_id: str,
        owner: LeaseOwner,
        *,
        ttl: float = DEFAULT_LEASE_TTL,
        epoch: int | None = None,
    ) -> Lease:
        """Take the session's lease for ``owner`` for ``ttl`` seconds; raises `LeaseHeld` or `LeaseLost`.

        Free (never leased, expired or released): the caller takes it at the next epoch, or at ``epoch`` when
        given (it must exceed the stored epoch — a fleet passes its attempt number). Held live by another
        owner: `LeaseHeld`, naming the holder. Held by this very owner: renewed, same epoch.
        """
        check_owner(owner, epoch)
        decide = acquire_decision(project_key, session_id, owner, epoch, ttl_ms(ttl))
        row = await self._in_thread(self._lease_write, project_key, session_id, decide)
        assert row is not None  # an acquire either writes its row or raises
        return row.lease(project_key, session_id)

    async def renew_lease(self, lease: Lease, *, ttl: float | None = None) -> Lease:
        """Extend ``lease`` by ``ttl`` seconds from now (default: its own ttl); `LeaseLost` if it is no longer
        the session's (taken over, or released)."""
        decide = renew_decision(lease, ttl_ms(lease.ttl if ttl is None else ttl))
        row = await self._in_thread(self._lease_write, lease.project_key, lease.session_id, decide)
        assert row is not None  # a renewal either writes its row or raises
        return row.lease(lease.project_key, lease.session_id)

    async def release_lease(self, lease: Lease) -> bool:
        """End ``lease`` now, so another owner may take the session at once; False if it was not this lease's
        to end any more (taken over or already released). The epoch stays stored: epochs never restart.

        It ends exactly the lease given (its epoch, checked in the write transaction), whoever calls it:
        `take_lease` ends an abandoned holder's lease this way, with the `Lease` that `LeaseHeld` carried."""
        row = await self._in_thread(self._lease_write, lease.project_key, lease.session_id, release_decision(lease))
        return row is not None

    async def read_lease(self, project_key: str, session_id: str) -> Lease | None:
        """Who drives the session now: its live lease, or None (never leased, released or expired)."""
        row, now = await self._in_thread(self._lease_read, project_key, session_id)
        return row.lease(project_key, session_id) if row is not None and row.live(now) else None

    async def append_fenced(self, key: SessionKey, entries: list[SessionStoreEntry], *, lease: Lease) -> None:
        """`append`, refused with `LeaseLost` (nothing written) unless ``lease`` still holds the session's epoch,
        checked inside the append's write transaction. ``key`` must be the leased session's (or a subkey)."""
        if not lease.covers(key):
            raise ValueError(
                f"the lease of session {lease.session_id} cannot fence an append to session {key['session_id']}"
            )
        if not entries:
            return
        await anyio.to_thread.run_sync(self._append_sync, key, entries, lease)


if TYPE_CHECKING:
    _conforms: type[SessionLeases] = LeaseMethods  # its five signatures are the protocol's (checked here)
