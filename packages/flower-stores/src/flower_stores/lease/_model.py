"""The session lease's values: who drives a session (`LeaseOwner`), the lease it holds (`Lease`), the row every
backend stores (`LeaseRow`), and the errors (`LeaseHeld`, `LeaseLost`). The rules are in `_rules`."""

from __future__ import annotations

import math
import os
import socket
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from .._shared.errors import StoreError

if TYPE_CHECKING:
    from claude_agent_sdk import SessionKey, SessionListSubkeysKey

__all__ = [
    "DEFAULT_LEASE_TTL",
    "Lease",
    "LeaseError",
    "LeaseHeld",
    "LeaseLost",
    "LeaseOwner",
    "LeaseRow",
    "clock",
    "short",
    "utc",
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
            utc(self.acquired_ms),
            utc(self.renewed_ms),
            utc(self.expires_ms),
        )


class LeaseError(StoreError):
    """A lease was refused or lost; `LeaseHeld` and `LeaseLost` say which."""


class LeaseHeld(LeaseError):  # noqa: N818 - the name says what was found: the lease is held
    """Another owner holds a live lease on the session. ``lease`` is theirs; ``remaining`` its seconds left."""

    def __init__(self, lease: Lease, now: datetime) -> None:
        self.lease = lease
        self.remaining = max(0.0, (lease.expires_at - now).total_seconds())
        super().__init__(
            f"session {short(lease.session_id)} is driven by {lease.owner} since {clock(lease.acquired_at, now)}; "
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


def utc(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


def clock(at: datetime, now: datetime) -> str:
    """``12:03:04 UTC``, with the date when it is not today's."""
    at = at.astimezone(UTC)
    return f"{at:%H:%M:%S} UTC" if at.date() == now.astimezone(UTC).date() else f"{at:%Y-%m-%d %H:%M:%S} UTC"


def short(session_id: str) -> str:
    """A session id as people read it in messages: a uuid's first 8 characters (as Claude Code shows them)."""
    return session_id[:8] if len(session_id) > 12 else session_id
