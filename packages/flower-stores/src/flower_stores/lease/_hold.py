"""`hold_lease`: take a session's lease, keep it renewed while the work runs, give it back at the end.

Every driver needs the same loop around its step — acquire, renew well before expiry, stop the work the moment
the lease is lost, release when done — and the subtle part is the middle: a renewal that finds the lease taken
over must stop the step, not merely log, or the superseded driver keeps calling the model for nothing (its
appends are refused by the fence either way). So the body runs in a cancel scope that a lost renewal cancels.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio

from .._shared.errors import StoreError
from ._fenced import FencedSessionStore
from ._model import DEFAULT_LEASE_TTL, Lease, LeaseLost, LeaseOwner
from ._protocol import SessionLeases
from ._takeover import take_lease

__all__ = ["hold_lease"]


@asynccontextmanager
async def hold_lease(
    store: SessionLeases,
    project_key: str,
    session_id: str,
    owner: LeaseOwner,
    *,
    ttl: float = DEFAULT_LEASE_TTL,
    epoch: int | None = None,
    break_abandoned: bool = True,
) -> AsyncIterator[FencedSessionStore]:
    """``async with hold_lease(store, project_key, session_id, owner) as view:`` — drive the session through
    ``view`` (``ClaudeAgentOptions(session_store=view)``; ``view.lease`` is the current lease).

    Acquiring raises `LeaseHeld` / `LeaseLost` as `acquire_lease` does, before the body runs — except that a
    lease whose holder is a dead process of this machine is taken over at once (`take_lease`; pass
    ``break_abandoned=False`` to wait such a lease out too). While the body
    runs the lease is renewed every ``ttl / 3`` seconds; a renewal that fails for a passing reason (the
    database briefly unreachable) is retried at the next tick, and one that finds the lease lost cancels the
    body and raises `LeaseLost` from the ``async with``. On exit the lease is released, so the next driver
    need not wait for it to expire.
    """
    lease = await take_lease(
        store, project_key, session_id, owner, ttl=ttl, epoch=epoch, break_abandoned=break_abandoned
    )
    view = FencedSessionStore(store, lease)
    lost: list[LeaseLost] = []

    async def keep_renewed(scope: anyio.CancelScope) -> None:
        current: Lease = lease
        while True:
            await anyio.sleep(current.ttl / 3)
            try:
                current = await store.renew_lease(current, ttl=ttl)
            except LeaseLost as exc:
                lost.append(exc)
                scope.cancel()  # the body stops at its next await; the `async with` raises below
                return
            except StoreError:
                continue  # the lease may still be ours: the next tick tries again, the fence guards meanwhile
            view.lease = current

    error: BaseException | None = None
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(keep_renewed, tg.cancel_scope)
            try:
                yield view
            except BaseException as exc:  # noqa: BLE001 - re-raised below, outside the task group, so that it is not wrapped in an ExceptionGroup
                error = exc
            finally:
                tg.cancel_scope.cancel()
    finally:
        if not lost:
            with anyio.CancelScope(shield=True):  # released even when the body was cancelled from outside
                try:
                    await store.release_lease(view.lease)
                except StoreError:
                    pass  # unreleased, it expires within ttl; the body's own outcome is what the caller needs
    if lost:
        # The body was stopped by our own cancellation (which must not leave this scope): the loss is the news.
        raise lost[0]
    if error is not None:
        raise error
