"""`ControlSource`: the runs of one store (this workspace's, or a ``--store``'s) for the page, through `Control` —
the same calls ``flower status / watch / answer / mail / stop`` make, so the page's buttons do what the verbs do.

`Control` is blocking (short store transactions): each call runs in a worker thread, off the server's loop.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

import anyio.to_thread

from ..control import Control, ControlError, RunInfo, default_sender
from ._sources import SourceError

__all__ = ["ANSWER_WAIT_S", "ControlSource"]

T = TypeVar("T")
ANSWER_WAIT_S = 15.0  # how long the page waits for the run to say it took a message (within a second, unless loaded)


def _status(message: str) -> int:
    """The HTTP status of a `ControlError`: an unknown run is 404; a run that cannot take this now, 409."""
    return 404 if message.startswith("no run ") else 409


class ControlSource:
    """The page's `RunSource` over a `Control` (named ``name``: "local" for this workspace's runs)."""

    def __init__(self, control: Control, name: str = "local", sender: str | None = None) -> None:
        self.control = control
        self.name = name
        self.sender = sender or f"{default_sender()} via flower ui"  # as the verbs sign: "via flower answer"

    async def _call(self, work: Callable[[], T]) -> T:
        try:
            return await anyio.to_thread.run_sync(work)
        except ControlError as exc:
            raise SourceError(str(exc), _status(str(exc))) from None

    async def list_runs(self) -> list[dict[str, Any]]:
        return [_row(info) for info in await self._call(self.control.runs)]

    async def events(self, run_id: str, after: int = 0) -> AsyncIterator[dict[str, Any]]:
        info = await self._call(functools.partial(self.control.run, run_id))
        try:
            async for item in self.control.follow(info.run_id, after=after):
                yield {"seq": item.seq, "at_ms": item.at_ms, "event": item.event}
        except ControlError as exc:
            raise SourceError(str(exc), _status(str(exc))) from None

    async def _tell(self, send: Callable[[], Any], what: str) -> str:
        message = await self._call(send)
        taken = await self._call(functools.partial(self.control.wait_taken, message, timeout_s=ANSWER_WAIT_S))
        if taken is None:
            return f"{what} sent; the run has not taken it yet (it does within a second while it runs)"
        note = str(taken.get("note") or "")
        if not taken.get("ok", True):
            raise SourceError(f"the run did not take the {what}: {note or 'its events say why'}", 409)
        return f"{what} taken by the run" + (f": {note}" if note else "")

    async def answer(self, run_id: str, text: str) -> str:
        return await self._tell(functools.partial(self.control.answer, run_id, text, sender=self.sender), "answer")

    async def mail(self, run_id: str, text: str) -> str:
        return await self._tell(functools.partial(self.control.mail, run_id, text, sender=self.sender), "mail")

    async def stop(self, run_id: str) -> str:
        return await self._tell(functools.partial(self.control.stop, run_id, sender=self.sender), "stop")


def _row(info: RunInfo) -> dict[str, Any]:
    """A run as the page lists it: `RunInfo`'s fields, and the names every source gives (`RunSource`)."""
    row = info.to_json()
    row.update(
        id=info.run_id,
        question=info.question or None,
        created_ms=info.started_ms,
        session_id=info.session,
        title=info.run_id,
    )
    return row
