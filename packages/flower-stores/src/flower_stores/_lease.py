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
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from ._common import StoreError

if TYPE_CHECKING:
    from claude_agent_sdk import SessionKey, SessionListSubkeysKey, SessionStoreEntry

__all__ = [
    "DEFAULT_LEASE_TTL",
    "Lease",
    "LeaseError",
    "LeaseHeld",
    "LeaseLost",
    "LeaseOwner",
    "LeaseRow",
    "SessionLeases",
    "acquire_decision",
    "fence_error",
    "release_decision",
    "renew_decision",
    "ttl_ms",
]

# Long enough that a renewal every ttl/3 survives a slow database or a paused laptop lid for a few seconds,
# short enough that a crashed driver's session is free again within a minute.
DEFAULT_LEASE_TTL = 60.0


@dataclass(frozen=True, slots=True)
class LeaseOwner:
    """Who drives a session: a process (``host``, ``pid``) and the run it belongs to (``run_id``, free-form)."""

    host: str
    pid: int
    run_id: str = ""

    @classmethod
    def this_process(cls, run_id: str = "") -> LeaseOwner:
        """This process on this machine, for ``run_id``."""
        return cls(socket.gethostname(), os.getpid(), run_id)

    def __str__(self) -> str:
        run = f" (run {self.run_id})" if self.run_id else ""
        return f"{self.host}/pid {self.pid}{run}"


@dataclass(frozen=True, slots=True)
class Lease:
    """A held lease, as the store granted or renewed it. Times are UTC, on the storage clock."""

    project_key: str
    session_id: str
    owner: LeaseOwner
    epoch: int
    acquired_at: datetime
    renewed_at: datetime
    expires_at: datetime

    @property
    def ttl(self) -> float:
        """Seconds the latest grant or renewal ran for (what a renewal without ``ttl`` asks for again)."""
        return (self.expires_at - self.renewed_at).total_seconds()

    def covers(self, key: SessionKey | SessionListSubkeysKey) -> bool:
        """Whether ``key`` is this lease's session: its main transcript or one of its subkeys (subagents)."""
        return key["project_key"] == self.project_key and key["session_id"] == self.session_id


@dataclass(frozen=True, slots=True)
class LeaseRow:
    """The stored form of a lease (one row per session in every backend): times in epoch ms."""

    epoch: int
    host: str
    pid: int
    run_id: str
    acquired_ms: int
    renewed_ms: int
    expires_ms: int
    released: bool = False

    @property
    def owner(self) -> LeaseOwner:
        return LeaseOwner(self.host, self.pid, self.run_id)

    def live(self, now_ms: int) -> bool:
        return not self.released and self.expires_ms > now_ms

    def lease(self, project_key: str, session_id: str) -> Lease:
        return Lease(
            project_key,
            session_id,
            self.owner,
            self.epoch,
            _utc(self.acquired_ms),
            _utc(self.renewed_ms),
            _utc(self.expires_ms),
        )


class LeaseError(StoreError):
    """A lease was refused or lost; `LeaseHeld` and `LeaseLost` say which."""


class LeaseHeld(LeaseError):  # noqa: N818 - the name says what was found: the lease is held
    """Another owner holds a live lease on the session. ``lease`` is theirs; ``remaining`` its seconds left."""

    def __init__(self, lease: Lease, now: datetime) -> None:
        self.lease = lease
        self.remaining = max(0.0, (lease.expires_at - now).total_seconds())
        super().__init__(
            f"session {_short(lease.session_id)} is driven by {lease.owner} since {_clock(lease.acquired_at, now)}; "
            f"the lease expires in {math.ceil(self.remaining)} s"
        )


class LeaseLost(LeaseError):  # noqa: N818 - the name says what happened to the caller's lease
    """The caller's epoch is no longer the session's: it must stop driving it.

    ``epoch`` is the caller's; ``current`` the stored lease that superseded it, if one is live (None when the
    lease was released or lapsed and nobody holds the session now).
    """

    def __init__(self, message: str, *, epoch: int, current: Lease | None) -> None:
        self.epoch = epoch
        self.current = current
        super().__init__(message)


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
                f"held by {current.owner} since {_clock(current.acquired_at, _utc(now))}"
                if stored.live(now)
                else f"last held by {current.owner}"
            )
            raise LeaseLost(
                f"session {_short(session_id)}: epoch {epoch} is not newer than the stored epoch {stored.epoch} "
                f"({holder}); a later attempt has taken the session over, so this one must not drive it",
                epoch=epoch,
                current=current if stored.live(now) else None,
            )
        if mine and (epoch is None or epoch == stored.epoch):
            # The same owner again: a retried acquire, or the next step of the same run. Keep the epoch.
            return _renewed(stored, now, ttl)
        if stored.live(now) and not mine:
            raise LeaseHeld(stored.lease(project_key, session_id), _utc(now))
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
    session = _short(lease.session_id)
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
            f"{current.owner} at {_clock(current.acquired_at, _utc(now))}; this process must stop driving it",
            epoch=lease.epoch,
            current=current if stored.live(now) else None,
        )
    return LeaseLost(
        f"session {session}: the lease of epoch {lease.epoch} was released; acquire it again to drive the session",
        epoch=lease.epoch,
        current=None,
    )


def _utc(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


def _clock(at: datetime, now: datetime) -> str:
    """``12:03:04 UTC``, with the date when it is not today's."""
    at = at.astimezone(UTC)
    return f"{at:%H:%M:%S} UTC" if at.date() == now.astimezone(UTC).date() else f"{at:%Y-%m-%d %H:%M:%S} UTC"


def _short(session_id: str) -> str:
    """A session id as people read it in messages: a uuid's first 8 characters (as Claude Code shows them)."""
    return session_id[:8] if len(session_id) > 12 else session_id
