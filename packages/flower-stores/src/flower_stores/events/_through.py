"""`RunEventsThrough`: the run log's and the inbox's methods, straight to a wrapper's backend (the layers rewrite
transcripts, never these)."""

from __future__ import annotations

from .._shared.passthrough import Forward
from ._protocol import RunEventLog, RunInbox

__all__ = ["RunEventsThrough"]


class RunEventsThrough:
    append_events = Forward(RunEventLog.append_events)
    read_events = Forward(RunEventLog.read_events)
    run_heads = Forward(RunEventLog.run_heads)
    run_head = Forward(RunEventLog.run_head)
    live_runs = Forward(RunEventLog.live_runs)
    post_message = Forward(RunInbox.post_message)
    take_messages = Forward(RunInbox.take_messages)
