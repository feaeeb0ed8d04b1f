"""A run's published events and its inbox, kept in the store beside its records.

`RunEventLog`: every event a run prints with ``--json`` (bounded by `bound_event`: no large tool outputs, long
strings cut), numbered per run, and the run's latest summary (`RunHead`) written with them; read from an offset
or followed (`follow_events`) by any process that reaches the store. `RunInbox`: answers, mail and stops sent to a
run (`InboxMessage`), each taken by the run once. Both stores implement them on tables of their own
(SQLite: ``run_events``, ``run_heads``, ``run_inbox``; PostgreSQL: schema version 4); `RunEventMethods` is the
rules over a backend's primitives, `RunEventsThrough` what a wrapper passes on.
"""

from ._bound import MAX_EVENT_CHARS, MAX_STRING_CHARS, MAX_TOOL_OUTPUT_CHARS, bound_event, cut
from ._follow import follow_events
from ._model import INBOX_KINDS, InboxKind, InboxMessage, RunEvent, RunHead
from ._protocol import EventRow, HeadRow, MessageRow, RunEventLog, RunEventMethods, RunInbox
from ._through import RunEventsThrough

__all__ = [
    "INBOX_KINDS",
    "MAX_EVENT_CHARS",
    "MAX_STRING_CHARS",
    "MAX_TOOL_OUTPUT_CHARS",
    "EventRow",
    "HeadRow",
    "InboxKind",
    "InboxMessage",
    "MessageRow",
    "RunEvent",
    "RunEventLog",
    "RunEventMethods",
    "RunEventsThrough",
    "RunHead",
    "RunInbox",
    "bound_event",
    "cut",
    "follow_events",
]
