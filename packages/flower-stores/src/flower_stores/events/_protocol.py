"""The run log's and the inbox's protocols and their rules over a backend's primitives (`RunEventMethods`).

Both are **blocking** calls (short transactions): a run's publisher calls them from its own thread, a reader from
a worker thread (``anyio.to_thread.run_sync``) or a command. A backend supplies the ``_events_*`` and
``_inbox_*`` primitives, each one transaction; the checks and the decoding are here, once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from .._shared.json_text import dumps
from ._bound import bound_event
from ._model import INBOX_KINDS, InboxMessage, RunEvent, RunHead

__all__ = ["EventRow", "HeadRow", "MessageRow", "RunEventLog", "RunEventMethods", "RunInbox"]

_READ_LIMIT = 1000  # events per read: a follower reads on from the last seq it saw


@runtime_checkable
class RunEventLog(Protocol):
    """Every run's published events, kept beside its records (see the module docstring of `flower_stores.events`).

    ``append_events`` stores events (bounded by `bound_event`) and, with ``head``, the run's summary in the same
    transaction; it returns the last ``seq``. ``read_events`` returns the events after ``after``, oldest first.
    ``run_heads`` lists every run that published, newest first; ``run_head`` one. ``live_runs`` is the runs whose
    session lease is live now (a process drives one of their sessions).
    """

    def append_events(
        self, run_id: str, events: list[dict[str, Any]], *, head: dict[str, Any] | None = None
    ) -> int: ...

    def read_events(self, run_id: str, *, after: int = 0, limit: int = _READ_LIMIT) -> list[RunEvent]: ...

    def run_heads(self) -> list[RunHead]: ...

    def run_head(self, run_id: str) -> RunHead | None: ...

    def live_runs(self) -> set[str]: ...


@runtime_checkable
class RunInbox(Protocol):
    """Messages to a run (answer / mail / stop), each taken by the run once.

    ``post_message`` stores one and returns it with its id; ``take_messages`` returns the run's messages nobody
    took yet, oldest first, and marks them taken in the same transaction (two takers never get the same one).
    """

    def post_message(
        self, run_id: str, kind: str, text: str, *, sender: str = "", question: str = ""
    ) -> InboxMessage: ...

    def take_messages(self, run_id: str) -> list[InboxMessage]: ...


def _check_run_id(run_id: object) -> str:
    if not isinstance(run_id, str) or not run_id.strip():
        raise ValueError(f"a run id must be a non-empty string, not {run_id!r}")
    return run_id


# (seq, at_ms, event JSON) / (run_id, created_ms, updated_ms, last_seq, head JSON) /
# (id, kind, text, sender, question, at_ms): what the primitives return.
EventRow = tuple[int, int, str]
HeadRow = tuple[str, int, int, int, str | None]
MessageRow = tuple[int, str, str, str, str, int]


class RunEventMethods:
    """`RunEventLog` and `RunInbox` for a backend that supplies the primitives below."""

    def _events_append(self, run_id: str, events: list[tuple[str, str]], head: str | None) -> int:
        """Store ``(kind, JSON)`` events numbered on from the run's last seq, and the head; the last seq."""
        raise NotImplementedError

    def _events_read(self, run_id: str, after: int, limit: int) -> list[EventRow]:
        raise NotImplementedError

    def _events_heads(self, run_id: str | None) -> list[HeadRow]:
        """Every run's head, newest first (by when it first published), or only ``run_id``'s."""
        raise NotImplementedError

    def _events_live_runs(self) -> list[str]:
        raise NotImplementedError

    def _inbox_post(self, run_id: str, kind: str, text: str, sender: str, question: str) -> tuple[int, int]:
        """(id, at_ms) of the stored message."""
        raise NotImplementedError

    def _inbox_take(self, run_id: str) -> list[MessageRow]:
        raise NotImplementedError

    def append_events(self, run_id: str, events: list[dict[str, Any]], *, head: dict[str, Any] | None = None) -> int:
        """Store ``events`` (bounded) and ``head`` for ``run_id``; the run's last ``seq`` (0: nothing ever stored)."""
        run_id = _check_run_id(run_id)
        rows = [
            (str(e.get("kind", "unknown"))[:40] if isinstance(e, dict) else "unknown", bound_event(e)) for e in events
        ]
        head_text = dumps(head) if head is not None else None
        return self._events_append(run_id, rows, head_text)

    def read_events(self, run_id: str, *, after: int = 0, limit: int = _READ_LIMIT) -> list[RunEvent]:
        """The run's events with ``seq`` above ``after``, oldest first, at most ``limit`` ([] for an unknown run)."""
        run_id = _check_run_id(run_id)
        if limit < 1:
            raise ValueError(f"limit must be at least 1, not {limit}")
        return [RunEvent.decode(run_id, *row) for row in self._events_read(run_id, max(0, int(after)), int(limit))]

    def run_heads(self) -> list[RunHead]:
        """Every run that published, newest first."""
        return [RunHead.decode(*row) for row in self._events_heads(None)]

    def run_head(self, run_id: str) -> RunHead | None:
        rows = self._events_heads(_check_run_id(run_id))
        return RunHead.decode(*rows[0]) if rows else None

    def live_runs(self) -> set[str]:
        """The runs a process drives now: one of their session leases is live (held, not expired)."""
        return set(self._events_live_runs())

    def post_message(self, run_id: str, kind: str, text: str, *, sender: str = "", question: str = "") -> InboxMessage:
        """Send the run an ``answer`` (to ``question``, or to the one it waits on), a ``mail`` or a ``stop``."""
        run_id = _check_run_id(run_id)
        if kind not in INBOX_KINDS:
            raise ValueError(f"a message to a run is one of {', '.join(INBOX_KINDS)}, not {kind!r}")
        if not isinstance(text, str):
            raise ValueError(f"a message's text must be a string, not {type(text).__name__}")
        if kind != "stop" and not text.strip():
            raise ValueError(f"an empty {kind} says nothing; give its text")
        message_id, at = self._inbox_post(run_id, kind, text, sender[:200], question[:40])
        return InboxMessage(message_id, run_id, kind, text, sender[:200], question[:40], at)

    def take_messages(self, run_id: str) -> list[InboxMessage]:
        """The run's messages not taken yet, oldest first, now marked taken."""
        run_id = _check_run_id(run_id)
        return [
            InboxMessage(int(i), run_id, kind, text, sender, question, int(at))
            for i, kind, text, sender, question, at in self._inbox_take(run_id)
        ]


if TYPE_CHECKING:
    _logs: type[RunEventLog] = RunEventMethods  # its signatures are the protocols' (checked here)
    _inboxes: type[RunInbox] = RunEventMethods
