"""`follow_events`: a run's events as they are stored, for a reader in another process (``flower watch``, a page)."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable

import anyio
import anyio.to_thread

from ._model import RunEvent
from ._protocol import RunEventLog

__all__ = ["follow_events"]


async def follow_events(
    log: RunEventLog,
    run_id: str,
    *,
    after: int = 0,
    poll_s: float = 0.25,
    until: Callable[[RunEvent], bool] | None = None,
    gone: Callable[[], bool] | None = None,
) -> AsyncIterator[RunEvent]:
    """Yield ``run_id``'s events after ``after`` as they are stored, oldest first, for as long as the caller reads.

    Each read runs in a worker thread; when nothing new is there it waits ``poll_s`` (a quarter second: another
    process sees an event well within a second of its storing). ``until``: stop after the event it accepts (a
    run's ``done``). ``gone``: asked (in a worker thread) when nothing new is there; true ends the follow (no
    process drives the run any more). The caller ends the follow otherwise by leaving the loop or cancelling.
    """
    seen = after
    while True:
        batch = await anyio.to_thread.run_sync(functools.partial(log.read_events, run_id, after=seen))
        for event in batch:
            seen = event.seq
            yield event
            if until is not None and until(event):
                return
        if not batch:
            if gone is not None and await anyio.to_thread.run_sync(gone):
                return
            await anyio.sleep(poll_s)
