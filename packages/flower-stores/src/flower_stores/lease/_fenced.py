"""`FencedSessionStore`: the store to give the SDK while a process holds a session's lease.

The SDK calls ``store.append(key, entries)`` with no lease in sight, so the lease travels in the store object:
this view sends every append to the leased session — its main transcript and its subagent transcripts — to
the backend's ``append_fenced``, which checks the epoch inside the append's own write transaction and raises
`LeaseLost` (writing nothing) once another owner has taken the session over. Appends to other sessions, loads
and everything else go to the backend unchanged — over a layer, its loads are still rewritten.

`Fences` is the ``fenced(lease)`` method every store that grants leases has (the backends through
`LeaseMethods`, the layers and this view through `LeasesThrough`): the view over *that* store, so a layer's
loads still go through its rewrite.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Self, cast

from .._shared.passthrough import Forward, SdkMethodsThrough, Wrapper, has_all, sdk_mixins, variant
from ..index import IndexThrough, answers_index
from ..report import LoadReport
from ._model import Lease
from ._protocol import SessionLeases

if TYPE_CHECKING:
    from claude_agent_sdk import SessionKey, SessionStoreEntry

__all__ = ["FencedSessionStore", "Fences", "LeasesThrough"]


class Fences:
    """``fenced(lease)``: this store as the SDK should see it while ``lease`` is held."""

    def fenced(self, lease: Lease) -> FencedSessionStore:
        """This store as the SDK should see it while ``lease`` is held: appends to the session fenced."""
        # Only classes with the five lease methods have this one (`LeaseMethods`, `LeasesThrough`).
        return FencedSessionStore(cast("SessionLeases", self), lease)


class LeasesThrough(Fences):
    """The `SessionLeases` methods, straight to the backend; ``fenced`` builds a view over *this* wrapper, so
    its loads still go through whatever this wrapper does to them (the layers' rewriting)."""

    acquire_lease = Forward(SessionLeases.acquire_lease)
    renew_lease = Forward(SessionLeases.renew_lease)
    release_lease = Forward(SessionLeases.release_lease)
    read_lease = Forward(SessionLeases.read_lease)
    append_fenced = Forward(SessionLeases.append_fenced)


if TYPE_CHECKING:

    class _MayPresent(SdkMethodsThrough, IndexThrough, LeasesThrough):
        """What a type checker is told a view has; at run time each group is there only when the backend has it."""

else:
    _MayPresent = object


class FencedSessionStore(Wrapper, _MayPresent):
    """A view of ``store`` whose appends to ``lease``'s session are fenced by that lease.

    ``FencedSessionStore(store, lease)`` (or ``store.fenced(lease)``): ``store`` grants leases (a
    `SqliteSessionStore`, a `PostgresSessionStore`, a layer over either, or any `SessionLeases`). Use it as
    ``ClaudeAgentOptions(session_store=view)``. It has exactly the optional methods of ``store`` (the SDK
    probes for them), its `SessionIndex` questions and lease methods when ``store`` has them, and owns
    nothing: closing stays with whoever opened ``store``.
    """

    lease: Lease

    def __new__(cls, store: SessionLeases, lease: Lease) -> Self:
        # Not the run records: the lease fences a session's transcript, and the view does not claim to fence more.
        mixins = [*sdk_mixins(store)]
        if answers_index(store):
            mixins.append(IndexThrough)
        if has_all(store, LeasesThrough):
            mixins.append(LeasesThrough)
        return super().__new__(variant(cls, mixins))

    def __init__(self, store: SessionLeases, lease: Lease) -> None:
        if not isinstance(store, SessionLeases):
            raise TypeError(
                f"FencedSessionStore needs a store that grants leases (SqliteSessionStore, PostgresSessionStore or a "
                f"layer over one), not {type(store).__name__}"
            )
        if not isinstance(lease, Lease):
            raise TypeError(f"FencedSessionStore needs the Lease that acquire_lease returned, not {lease!r}")
        self.backend = store
        self.lease = lease

    async def append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        """Fenced for the leased session (raises `LeaseLost`, nothing written, once it was taken over)."""
        if self.lease.covers(key):
            await self.backend.append_fenced(key, entries, lease=self.lease)
        else:
            await self.backend.append(key, entries)

    async def load(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        loaded: list[SessionStoreEntry] | None = await self.backend.load(key)
        return loaded

    @property
    def last_report(self) -> LoadReport:
        """The backend's latest load report (a layer's), so `trim_report` works on the view too."""
        report = getattr(self.backend, "last_report", None)
        return report if isinstance(report, LoadReport) else LoadReport()

    def __repr__(self) -> str:
        return f"FencedSessionStore({self.backend!r}, epoch={self.lease.epoch})"
