"""`StoreUpkeep`: delete and prune a store's sessions without breaking what runs or what a wake needs, and compact it.

Two guards decide what a plan may delete:

- **a live lease** (`SessionLeases.read_lease`): a process drives the session now. Never deleted, ``force`` or
  not — deleting under a driver would cut its transcript in two. `apply` asks again right before each delete,
  so a lease taken after the plan was made still protects its session (a lease taken between that check and
  the delete itself is not seen: upkeep is a person's command, not a concurrent writer's lock);
- **a run's lineage** (`RunRecords.lineage` of every run the store records, plus ``needed``: what the caller
  knows, e.g. a run dir's ``lineage.json``): a wake would resume that session. Kept unless ``force``; a forced
  plan lists those deletions in ``forced`` so the caller can say so.

Compaction and size are the backend's (`SqliteOps`, `PostgresOps`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from datetime import timedelta
from typing import Any

import anyio.to_thread

from ..backends import PostgresSessionStore, SqliteSessionStore
from ..lease import SessionLeases
from ..runs import RunRecords
from ._model import Kept, StoreSize, UpkeepPlan, UpkeepResult, UpkeepSession
from ._postgres_ops import PostgresOps
from ._sqlite_ops import SqliteOps

__all__ = ["StoreUpkeep"]


def _ops(store: object) -> SqliteOps | PostgresOps:
    if isinstance(store, SqliteSessionStore):
        return SqliteOps(store)
    if isinstance(store, PostgresSessionStore):
        return PostgresOps(store)
    raise TypeError(
        f"StoreUpkeep works on a SqliteSessionStore or a PostgresSessionStore (the bare backend), not {type(store).__name__}"
    )


def _seconds(older_than: float | timedelta) -> float:
    seconds = older_than.total_seconds() if isinstance(older_than, timedelta) else float(older_than)
    if not seconds >= 0:  # also refuses NaN
        raise ValueError(f"older_than must be a duration of zero or more, not {older_than!r}")
    return seconds


class StoreUpkeep:
    """Plans and applies deletions on a flower store, compacts it and measures it.

    ``needed`` maps session ids a wake would resume to the reason (one line each; the run dir's lineage, say),
    on top of the lineage the store itself records. ``clock`` (epoch seconds) is for tests. A store opened
    ``read_only`` can be planned on and measured (``flower doctor``); `apply` and `compact` refuse it.
    """

    def __init__(
        self, store: Any, *, needed: Mapping[str, str] | None = None, clock: Callable[[], float] = time.time
    ) -> None:
        self.store = store
        self._ops = _ops(store)
        self._needed = dict(needed or {})
        self._clock = clock

    # --- plans ------------------------------------------------------------------------------------

    async def plan_delete(
        self, session_ids: Iterable[str], *, project_key: str | None = None, force: bool = False
    ) -> UpkeepPlan:
        """A plan that deletes exactly these sessions (full ids; ``project_key`` narrows where they are looked
        up). An id the store does not hold is a ValueError naming it: nothing of the plan runs then."""
        wanted = list(dict.fromkeys(session_ids))
        stored = await anyio.to_thread.run_sync(self._ops.sessions, project_key)
        by_id: dict[str, UpkeepSession] = {}
        for session in stored:
            by_id.setdefault(session.session_id, session)
        unknown = [sid for sid in wanted if sid not in by_id]
        if unknown:
            where = f" in project {project_key}" if project_key else ""
            raise ValueError(f"no session {', '.join(unknown)}{where} in {self._where()}")
        return await self._plan([by_id[sid] for sid in wanted], force)

    async def plan_prune(
        self, older_than: float | timedelta, *, project_key: str | None = None, force: bool = False
    ) -> UpkeepPlan:
        """A plan that deletes the sessions last written more than ``older_than`` (seconds or a timedelta) ago."""
        cutoff_ms = int((self._clock() - _seconds(older_than)) * 1000)
        stored = await anyio.to_thread.run_sync(self._ops.sessions, project_key)
        return await self._plan([s for s in stored if s.mtime_ms < cutoff_ms], force)

    async def _plan(self, candidates: list[UpkeepSession], force: bool) -> UpkeepPlan:
        needed = await anyio.to_thread.run_sync(self._lineage_needs)
        delete: list[UpkeepSession] = []
        kept: list[Kept] = []
        forced: list[Kept] = []
        for bare in candidates:
            session = UpkeepSession(
                bare.project_key,
                bare.session_id,
                bare.mtime_ms,
                await anyio.to_thread.run_sync(self._ops.payload_bytes, bare),
            )
            held = await self._held_by(session)
            if held is not None:
                kept.append(Kept(session, held, forceable=False))
            elif session.session_id in needed:
                why = Kept(session, needed[session.session_id], forceable=True)
                if force:
                    forced.append(why)
                    delete.append(session)
                else:
                    kept.append(why)
            else:
                delete.append(session)
        return UpkeepPlan(tuple(delete), tuple(kept), tuple(forced))

    def _lineage_needs(self) -> dict[str, str]:
        """Session id → why a wake would resume it: the store's run records first, then ``needed``."""
        out: dict[str, str] = {}
        if isinstance(self.store, RunRecords):
            for run_id in self.store.run_ids():
                for step, session_id in self.store.lineage(run_id).items():
                    out.setdefault(session_id, f"step {step!r} of run {run_id} continues it (a wake would resume it)")
        for session_id, reason in self._needed.items():
            out.setdefault(session_id, reason)
        return out

    async def _held_by(self, session: UpkeepSession) -> str | None:
        if not isinstance(self.store, SessionLeases):
            return None
        lease = await self.store.read_lease(session.project_key, session.session_id)
        if lease is None:
            return None
        return f"driven now by {lease.owner} (a live lease until {lease.expires_at:%H:%M:%S} UTC)"

    # --- applying ---------------------------------------------------------------------------------

    async def apply(self, plan: UpkeepPlan) -> UpkeepResult:
        """Delete what ``plan`` says, each session with its subagent transcripts and summary; a session that a
        live lease holds by now is kept (and reported) instead."""
        self._check_writable()
        deleted: list[UpkeepSession] = []
        kept: list[Kept] = list(plan.kept)
        for session in plan.delete:
            held = await self._held_by(session)
            if held is not None:
                kept.append(Kept(session, held, forceable=False))
                continue
            await self.store.delete(session.key)
            deleted.append(session)
        return UpkeepResult(tuple(deleted), tuple(kept))

    async def compact(self, *, full: bool = False) -> tuple[StoreSize, StoreSize]:
        """Give the space of deleted rows back: the store's size before and after.

        SQLite: ``VACUUM`` then ``wal_checkpoint(TRUNCATE)`` (``full`` changes nothing). PostgreSQL:
        ``VACUUM (ANALYZE)``, which makes the space reusable without blocking runs; ``full=True``: ``VACUUM FULL``,
        which returns it to the file system but locks each table while it is rewritten.
        """
        self._check_writable()
        before = await anyio.to_thread.run_sync(self._ops.size)
        await anyio.to_thread.run_sync(self._ops.compact, full)
        after = await anyio.to_thread.run_sync(self._ops.size)
        return before, after

    async def live_sessions(self) -> list[tuple[str, str]]:
        """``(project_key, session_id)`` of every session a live lease holds now: runs going on (compacting then
        makes their appends wait while the file or the tables are rewritten)."""
        return await anyio.to_thread.run_sync(self._ops.live_leases)

    def size(self) -> StoreSize:
        """What the store takes now (a few short queries and a stat; no payload is read)."""
        return self._ops.size()

    def _check_writable(self) -> None:
        if getattr(self.store, "read_only", False):
            raise ValueError(f"{self._where()} was opened read-only; deleting and compacting need it writable")

    def _where(self) -> str:
        return str(getattr(self.store, "where", self.store))
