"""The lease of the session a step drives: one driver per session (flower-stores' session lease).

Why: two flower processes on one session (a second ``flower`` woken in the same workspace, a fleet retrying a
step whose first worker was only slow) would interleave two conversations under one id. Before a launch the
Runtime takes the lease of the session it is about to drive; the SDK gets the store's fenced view, so a
process whose lease was taken over can no longer append (its subagents' transcripts, subkeys of the same
session, included). flower_stores.hold_lease keeps the lease renewed while the step runs and stops the step
the moment a renewal finds it taken over.

A new session's id is chosen here (uuid4, or the caller's ``session_id``) and handed to the harness
(``ClaudeAgentOptions.session_id``), so its lease is taken before the harness starts, not after its first
message. A handoff successor and a fork are new sessions with their own id and lease; the retired session's
lease is released when the next one is taken. One lease is held at a time, for the whole step, and released
at its end.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import anyio

import flower_stores

if TYPE_CHECKING:
    from flower_stores import FencedSessionStore, Lease, LeaseOwner

__all__ = ["TAKEN_OVER", "SessionBusy", "StepLease", "lease_ttl_from_env"]

# How a step's error starts when its lease was taken over mid-step (the CLI exits 3 on it).
TAKEN_OVER = "session taken over"

LEASE_TTL_ENV = "FLOWER_LEASE_TTL"


class SessionBusy(flower_stores.LeaseHeld):
    """Another process drives the session this step would drive; raised by `Runtime.run` before anything runs.

    ``lease`` is the holder's (``lease.owner``: host, pid, run id); the message says who, since when, until
    when, and what to do.
    """

    def __init__(self, lease: Lease, now: datetime) -> None:
        super().__init__(lease, now)
        owner = lease.owner
        run = f", run {owner.run_id}" if owner.run_id else ""
        self.args = (
            f"session {_short(lease.session_id)} is being driven by another process (host {owner.host}, "
            f"pid {owner.pid}{run}) since {_clock(lease.acquired_at, now)}; its lease runs until "
            f"{_clock(lease.expires_at, now)} and is renewed while it works: wait for that run to finish or stop "
            "it, then run again (a lease left by a crash on another machine frees itself when it expires)",
        )


class _LaunchLike(Protocol):  # the Runtime's _Launch (a frozen dataclass): read-only fields
    @property
    def resume(self) -> str | None: ...
    @property
    def fork(self) -> bool: ...
    @property
    def session_id(self) -> str | None: ...


L = TypeVar("L", bound=_LaunchLike)


class StepLease:
    """The lease a step holds: at most one session at a time, renewed in the background, released at the end.

    ``enabled=False`` (``Runtime(lease=False)``, or a store that grants no leases): nothing is leased and the
    SDK gets ``store`` itself; a caller's ``session_id`` is still given to the harness.
    """

    def __init__(
        self,
        store: Any,
        project_key: str,
        owner: LeaseOwner,
        *,
        enabled: bool,
        ttl: float,
        epoch: int | None,
    ) -> None:
        self.store = store
        self.project_key = project_key
        self.owner = owner
        self.enabled = enabled and isinstance(store, flower_stores.SessionLeases)
        self.ttl = ttl
        self.epoch = epoch
        self._held: FencedSessionStore | None = None
        self._stack: AsyncExitStack | None = None

    @property
    def session_store(self) -> Any:
        """What the SDK writes through: the fenced view while a lease is held, else the store."""
        return self._held if self._held is not None else self.store

    @property
    def session_id(self) -> str | None:
        """The session whose lease is held (None: none)."""
        return self._held.lease.session_id if self._held is not None else None

    def first(
        self, resume: str | None, fork: bool, session_id: str | None, exists: Callable[[str], bool]
    ) -> tuple[str | None, str | None]:
        """The step's first launch as (resume, new session id): a caller's ``session_id`` names the new
        session, and with ``resume`` too it is used only when the session to resume is not in the store (a
        retry of a step whose first attempt stored nothing resumes "the same id" either way)."""
        if resume and session_id and not fork and not _exists(exists, resume):
            resume = None
        if resume and not fork:
            return resume, None
        return resume, session_id or self._new_id()

    async def launching(self, launch: L) -> L:
        """``launch`` with its new session's id filled in, after taking the lease of the session it drives."""
        if launch.resume and not launch.fork:
            await self.take(launch.resume)
            return launch
        sid = launch.session_id or self._new_id()
        if sid is not None:
            await self.take(sid)
        return replace(launch, session_id=sid)  # type: ignore[type-var]

    async def take(self, session_id: str) -> None:
        """Hold ``session_id``'s lease (the one held before, if another session's, is released first).

        Raises `SessionBusy` when another process holds it live, ``flower_stores.LeaseLost`` when the held
        lease was lost or ``epoch`` is stale.
        """
        if not self.enabled or self.session_id == session_id:
            return
        await self.end()
        stack = AsyncExitStack()
        try:
            self._held = await stack.enter_async_context(
                flower_stores.hold_lease(
                    self.store, self.project_key, session_id, self.owner, ttl=self.ttl, epoch=self.epoch
                )
            )
        except flower_stores.LeaseHeld as held:
            raise SessionBusy(held.lease, datetime.now(UTC)) from None
        self._stack = stack

    async def end(self) -> None:
        """Release the held lease; raises ``flower_stores.LeaseLost`` when it had been taken over.

        The renewal loop notices a takeover only at its next tick; a step that ends before that (a process
        that stalled, was taken over, and came back for its last messages) must not look like it drove its
        session to the end. So the lease is renewed once more first: its outcome is the step's.
        """
        held, stack, self._stack, self._held = self._held, self._stack, None, None
        if stack is None or held is None:
            return
        lost: flower_stores.LeaseLost | None = None
        try:
            with anyio.CancelScope(shield=True):  # also when the step was cancelled (by the loss, or Ctrl-C)
                await self.store.renew_lease(held.lease)
        except flower_stores.LeaseLost as exc:
            lost = exc
        except Exception:  # noqa: BLE001 - a store that cannot answer now (down, disk full) is not a lost lease
            pass  # the fence guarded every append; the step's own outcome stands
        await stack.aclose()  # raises the renewal loop's LeaseLost when it noticed first
        if lost is not None:
            raise lost

    def _new_id(self) -> str | None:
        # Chosen here only when it will be leased: without a lease the harness picks its own, as it always did.
        return str(uuid.uuid4()) if self.enabled else None


def taken_over(error: flower_stores.LeaseLost) -> str:
    """The step's error for a lease lost mid-step: who took the session over (from the store's message)."""
    return f"{TAKEN_OVER}: {error}"


def lease_ttl_from_env(environ: dict[str, str] | Any) -> float:
    """``FLOWER_LEASE_TTL`` (seconds, > 0) or the default; a bad value is a ValueError saying what to set."""
    raw = str(environ.get(LEASE_TTL_ENV, "") or "").strip()
    if not raw:
        return flower_stores.DEFAULT_LEASE_TTL
    try:
        ttl = float(raw)
    except ValueError:
        ttl = -1.0
    if not ttl > 0 or ttl != ttl or ttl == float("inf"):
        raise ValueError(f"{LEASE_TTL_ENV}={raw!r} is not a positive number of seconds; set e.g. {LEASE_TTL_ENV}=60")
    return ttl


def _exists(exists: Callable[[str], bool], session_id: str) -> bool:
    try:
        return exists(session_id)
    except Exception:  # noqa: BLE001 - a store that cannot answer: resume as asked (the harness says if it is missing)
        return True


def _clock(at: datetime, now: datetime) -> str:
    at = at.astimezone(UTC)
    return f"{at:%H:%M:%S} UTC" if at.date() == now.astimezone(UTC).date() else f"{at:%Y-%m-%d %H:%M:%S} UTC"


def _short(session_id: str) -> str:
    return session_id[:8] if len(session_id) > 12 else session_id
