"""The session lease: one driver per session, and the fence that keeps a superseded driver from writing.

Why: two processes driving one session (a fleet retrying a step whose first worker was only slow, a user
starting the same run twice) would interleave two conversations under one session id, and the next resume
would send the model both. A lease names the one process that may drive a session; its **epoch** grows with
every takeover, and an append through a fenced view (`FencedSessionStore`) is accepted only while the stored
epoch is still the appender's — checked inside the append's own write transaction, so no takeover can slip
in between the check and the write.

The rules, the same for every backend (the backends only supply a transaction; the decisions are here):

- ``acquire``: no lease, or the stored one expired or released → the caller takes it, epoch + 1 (or the epoch
  it asks for, which must exceed the stored one); a live lease of another owner → `LeaseHeld`. The same owner
  acquiring again (same host, pid and run id; not released) renews its own lease and keeps the epoch, so a
  retried acquire or a second step of one run never fences out the run's own late writes.
- An explicit epoch orders takeovers, it does not force them: one not above the stored epoch is `LeaseLost`
  (a later attempt has the session), and it does not break a live lease of another owner (`LeaseHeld`).
- ``renew`` extends the lease while its epoch is still the stored one and it was not released — also after
  it lapsed, if nobody took over meanwhile: nobody else drove the session. Otherwise `LeaseLost`.
- ``release`` ends the lease at once, keeping the row and its epoch: epochs must never restart, or a stale
  holder's epoch could come round again.
- The fence compares epochs only. Expiry and release let another owner take over; the takeover is what
  fences the old holder out. Until then the holder's late writes (the SDK flushes its mirror after a step)
  are still the session's own and are kept.

Times are epoch milliseconds on the **storage clock**: PostgreSQL's ``clock_timestamp()`` (read after the
transaction's locks are granted, so a wait for a lock does not age the lease), or, for SQLite, the wall clock
of the machine, read inside the write transaction (a SQLite file is shared only by processes of one machine,
so they share that clock).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from ._model import Lease, LeaseHeld, LeaseLost, LeaseOwner, LeaseRow, clock, short, utc

__all__ = [
    "Decision",
    "acquire_decision",
    "check_owner",
    "fence_error",
    "release_decision",
    "renew_decision",
    "ttl_ms",
]

# --- the decisions (pure: stored row and storage clock in, row to write out, or an exception) -------------

Decision = Callable[["LeaseRow | None", int], "LeaseRow | None"]


def ttl_ms(ttl: float) -> int:
    """``ttl`` seconds as whole milliseconds; a ttl that is not a positive finite number is a usage error."""
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not math.isfinite(ttl) or ttl <= 0:
        raise ValueError(f"a lease ttl is a positive number of seconds, not {ttl!r}")
    return max(1, round(ttl * 1000))


def check_owner(owner: LeaseOwner, epoch: int | None) -> None:
    if not isinstance(owner, LeaseOwner):
        raise TypeError(f"a lease owner is a LeaseOwner (e.g. LeaseOwner.this_process(run_id)), not {owner!r}")
    if epoch is not None and (isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 1):
        raise ValueError(f"a lease epoch is a whole number >= 1 (e.g. the attempt number), not {epoch!r}")


def acquire_decision(project_key: str, session_id: str, owner: LeaseOwner, epoch: int | None, ttl: int) -> Decision:
    """What `acquire_lease` writes, given the stored row and the storage clock (see the module's rules)."""

    def decide(stored: LeaseRow | None, now: int) -> LeaseRow:
        if stored is None:
            return _granted(owner, epoch if epoch is not None else 1, now, ttl)
        mine = stored.owner == owner and not stored.released
        if epoch is not None and (epoch < stored.epoch or (epoch == stored.epoch and not mine)):
            current = stored.lease(project_key, session_id)
            holder = (
                f"held by {current.owner} since {clock(current.acquired_at, utc(now))}"
                if stored.live(now)
                else f"last held by {current.owner}"
            )
            raise LeaseLost(
                f"session {short(session_id)}: epoch {epoch} is not newer than the stored epoch {stored.epoch} "
                f"({holder}); a later attempt has taken the session over, so this one must not drive it",
                epoch=epoch,
                current=current if stored.live(now) else None,
            )
        if mine and (epoch is None or epoch == stored.epoch):
            # The same owner again: a retried acquire, or the next step of the same run. Keep the epoch.
            return _renewed(stored, now, ttl)
        if stored.live(now) and not mine:
            raise LeaseHeld(stored.lease(project_key, session_id), utc(now))
        return _granted(owner, epoch if epoch is not None else stored.epoch + 1, now, ttl)

    return decide


def renew_decision(lease: Lease, ttl: int) -> Decision:
    """What `renew_lease` writes: the same lease for another ``ttl`` ms, if it is still the session's."""

    def decide(stored: LeaseRow | None, now: int) -> LeaseRow:
        if stored is None or stored.epoch != lease.epoch or stored.released:
            raise _lost(lease, stored, now, "renew")
        return _renewed(stored, now, ttl)

    return decide


def release_decision(lease: Lease) -> Decision:
    """What `release_lease` writes: the lease ended now (None: it is not this lease's to end any more)."""

    def decide(stored: LeaseRow | None, now: int) -> LeaseRow | None:
        if stored is None or stored.epoch != lease.epoch or stored.released:
            return None
        return LeaseRow(
            stored.epoch,
            stored.host,
            stored.pid,
            stored.run_id,
            stored.acquired_ms,
            stored.renewed_ms,
            min(stored.expires_ms, now),
            released=True,
        )

    return decide


def fence_error(lease: Lease, stored: LeaseRow | None, now: int) -> LeaseLost:
    """What a fenced append raises when the stored epoch is not ``lease``'s (see the module: epochs only).

    The backends compare the bare epoch in the append's transaction (the hot path reads one column) and read
    the whole row for this message only when the fence refuses.
    """
    return _lost(lease, stored, now, "append")


def _granted(owner: LeaseOwner, epoch: int, now: int, ttl: int) -> LeaseRow:
    return LeaseRow(epoch, owner.host, owner.pid, owner.run_id, now, now, now + ttl)


def _renewed(stored: LeaseRow, now: int, ttl: int) -> LeaseRow:
    return LeaseRow(stored.epoch, stored.host, stored.pid, stored.run_id, stored.acquired_ms, now, now + ttl)


def _lost(lease: Lease, stored: LeaseRow | None, now: int, action: str) -> LeaseLost:
    session = short(lease.session_id)
    if stored is None:
        return LeaseLost(
            f"session {session}: no lease is stored for it, so epoch {lease.epoch} cannot {action}; acquire the lease first",
            epoch=lease.epoch,
            current=None,
        )
    current = stored.lease(lease.project_key, lease.session_id)
    if stored.epoch != lease.epoch:
        return LeaseLost(
            f"session {session}: the lease of epoch {lease.epoch} was taken over at epoch {stored.epoch} by "
            f"{current.owner} at {clock(current.acquired_at, utc(now))}; this process must stop driving it",
            epoch=lease.epoch,
            current=current if stored.live(now) else None,
        )
    return LeaseLost(
        f"session {session}: the lease of epoch {lease.epoch} was released; acquire it again to drive the session",
        epoch=lease.epoch,
        current=None,
    )
