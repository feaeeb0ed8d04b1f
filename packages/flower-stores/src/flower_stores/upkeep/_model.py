"""The values of store upkeep: a session as upkeep sees it, why one is kept, what a plan would do and what it did."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = ["Kept", "StoreSize", "UpkeepPlan", "UpkeepResult", "UpkeepSession", "main_sessions"]


@dataclass(frozen=True, slots=True)
class UpkeepSession:
    """A main transcript of the store (its subagent transcripts go with it): key, last write, stored bytes."""

    project_key: str
    session_id: str
    mtime_ms: int
    payload_bytes: int = 0

    @property
    def key(self) -> dict[str, str]:
        return {"project_key": self.project_key, "session_id": self.session_id}


@dataclass(frozen=True, slots=True)
class Kept:
    """A session a plan leaves alone, and why (one line, for people).

    ``forceable`` is False for a session a live lease holds (a process drives it now: never deleted), True for
    one a run's lineage names (a wake would resume it: deleted only with ``force``).
    """

    session: UpkeepSession
    reason: str
    forceable: bool


@dataclass(frozen=True, slots=True)
class UpkeepPlan:
    """What `StoreUpkeep.apply` would delete (``delete``), leave (``kept``), and which deletions only ``force``
    allowed (``forced``: a lineage a wake would need — the caller says so)."""

    delete: tuple[UpkeepSession, ...] = ()
    kept: tuple[Kept, ...] = ()
    forced: tuple[Kept, ...] = ()

    @property
    def payload_bytes(self) -> int:
        """Transcript bytes the deletions remove (the file shrinks by about this much after a compaction)."""
        return sum(s.payload_bytes for s in self.delete)


@dataclass(frozen=True, slots=True)
class StoreSize:
    """What the store takes on disk. SQLite: the file, its WAL and its free pages; PostgreSQL: the schema's
    tables with their indexes and TOAST (``pg_total_relation_size``)."""

    total_bytes: int
    detail: dict[str, int] = field(default_factory=dict)
    reclaimable_bytes: int = 0  # SQLite's free pages: what VACUUM gives back at least (0 where unknown)


@dataclass(frozen=True, slots=True)
class UpkeepResult:
    """What `StoreUpkeep.apply` did: the sessions deleted, those kept (a lease taken since the plan included)."""

    deleted: tuple[UpkeepSession, ...]
    kept: tuple[Kept, ...]


def main_sessions(rows: Iterable[tuple[object, object]], project_key: str | None) -> list[UpkeepSession]:
    """The main transcripts among ``meta``'s ``(store_key, mtime)`` rows — keys ``project/session``, not a subagent's
    ``project/session/subpath`` — in one project or all, in the rows' order."""
    out: list[UpkeepSession] = []
    for key, mtime in rows:
        project, _, rest = str(key).partition("/")
        if rest and "/" not in rest and project_key in (None, project):
            out.append(UpkeepSession(project, rest, int(str(mtime))))
    return out
