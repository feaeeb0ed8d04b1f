"""Abandoned leases: a holder on this machine whose process is gone may be taken over at once.

Why: a driver killed with SIGKILL cannot release its lease, and making the next driver on the same machine
wait out the ttl (a minute by default) would turn every crash recovery into a pause. When the holder names
this host and its pid no longer exists, nothing can still be driving the session from there, so its lease is
ended (`release_lease` of that very lease: same epoch, checked in the store's write transaction, so a
takeover that slipped in meanwhile is not touched) and acquired afresh at the next epoch.

Only this host's pids can be checked: a holder on another machine keeps its lease until it expires. A pid
that was reused by another process looks alive, which errs on the safe side (the lease is waited out).
"""

from __future__ import annotations

import os
import socket

from ._model import DEFAULT_LEASE_TTL, Lease, LeaseHeld, LeaseOwner
from ._protocol import SessionLeases

__all__ = ["is_abandoned", "take_lease"]


def is_abandoned(owner: LeaseOwner) -> bool:
    """Whether ``owner`` is a process of this machine (same host name) that no longer exists."""
    if owner.host != socket.gethostname() or owner.pid <= 0 or owner.pid == os.getpid():
        return False
    try:
        os.kill(owner.pid, 0)  # signal 0: only asks whether the pid exists
    except ProcessLookupError:
        return True
    except OSError:  # PermissionError: it exists, as another user's process
        return False
    return False


async def take_lease(
    store: SessionLeases,
    project_key: str,
    session_id: str,
    owner: LeaseOwner,
    *,
    ttl: float = DEFAULT_LEASE_TTL,
    epoch: int | None = None,
    break_abandoned: bool = True,
) -> Lease:
    """`acquire_lease`, except that a live lease held by a dead process of this machine (`is_abandoned`) is
    ended first and the session taken over at the next epoch. Raises `LeaseHeld` for a live holder as
    ``acquire_lease`` does (with ``break_abandoned=False``, for every live holder), and `LeaseLost` for a
    stale ``epoch``."""
    try:
        return await store.acquire_lease(project_key, session_id, owner, ttl=ttl, epoch=epoch)
    except LeaseHeld as held:
        if not break_abandoned or not is_abandoned(held.lease.owner):
            raise
        # Ends exactly the dead holder's lease (False if someone else ended or took it meanwhile; then the
        # acquire below sees whoever holds it now and is refused or granted on its own merits).
        await store.release_lease(held.lease)
    return await store.acquire_lease(project_key, session_id, owner, ttl=ttl, epoch=epoch)
