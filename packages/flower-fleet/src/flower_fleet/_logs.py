"""A run's Temporal history as lines a person reads: each step's attempts, their worker, how each ended — and
why a run failed, in one line."""

from __future__ import annotations

import json
from typing import Any

from temporalio.api.enums.v1 import EventType

__all__ = ["failure_reason", "history_lines", "one_line"]

# Characters of a reason on one line: a judge's feedback fits whole; a pasted traceback does not flood the
# terminal (the full text stays in the history: `temporal workflow show`).
_LONGEST = 2000


def one_line(text: str) -> str:
    """``text`` on one line: its lines joined, spaces squeezed, cut at `_LONGEST` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= _LONGEST else flat[: _LONGEST - 1] + "…"


def _innermost(failure: Any) -> str:
    """The message of the deepest cause (an activity's failure wraps the error that failed it)."""
    message = failure.message
    while failure.HasField("cause"):
        failure = failure.cause
        message = failure.message or message
    return one_line(message)


def _ended_state(event: Any) -> dict[str, Any]:
    """The RunState a completed run returned (JSON, as the default converter writes it); {} if unreadable."""
    payloads = event.workflow_execution_completed_event_attributes.result.payloads
    try:
        value = json.loads(payloads[0].data) if payloads else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def failure_reason(history: Any) -> str:
    """Why the run ended without completing, in one line ("" when it did not fail)."""
    reason = ""
    for event in history.events:
        kind = event.event_type
        if kind == EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED:
            reason = _innermost(event.activity_task_failed_event_attributes.failure)
        elif kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED:
            return _innermost(event.workflow_execution_failed_event_attributes.failure) or reason
        elif kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED:
            return one_line(
                f"terminated: {event.workflow_execution_terminated_event_attributes.reason or 'no reason given'}"
            )
        elif kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT:
            return "the run timed out"
        elif kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
            ended = _ended_state(event)
            return one_line(str(ended.get("error") or "")) if ended.get("status") == "failed" else ""
    return ""


def history_lines(history: Any) -> list[str]:
    steps: dict[int, str] = {}  # the scheduled event's id -> the step (activity id)
    lines: list[str] = []
    for event in history.events:
        when = event.event_time.ToDatetime().strftime("%Y-%m-%d %H:%M:%S")
        kind = event.event_type
        if kind == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            attrs = event.activity_task_scheduled_event_attributes
            steps[event.event_id] = attrs.activity_id
            lines.append(f"{when}  {attrs.activity_id}: scheduled ({attrs.activity_type.name})")
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
            attrs = event.activity_task_started_event_attributes
            step = steps.get(attrs.scheduled_event_id, "?")
            lines.append(f"{when}  {step}: attempt {attrs.attempt} started on {attrs.identity}")
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            step = steps.get(event.activity_task_completed_event_attributes.scheduled_event_id, "?")
            lines.append(f"{when}  {step}: done")
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED:
            attrs = event.activity_task_failed_event_attributes
            lines.append(f"{when}  {steps.get(attrs.scheduled_event_id, '?')}: failed: {_innermost(attrs.failure)}")
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT:
            attrs = event.activity_task_timed_out_event_attributes
            lines.append(f"{when}  {steps.get(attrs.scheduled_event_id, '?')}: timed out: {_innermost(attrs.failure)}")
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED:
            attrs = event.activity_task_cancel_requested_event_attributes
            lines.append(f"{when}  {steps.get(attrs.scheduled_event_id, '?')}: cancel requested")
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_CANCELED:
            attrs = event.activity_task_canceled_event_attributes
            lines.append(f"{when}  {steps.get(attrs.scheduled_event_id, '?')}: cancelled")
        elif kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
            lines.append(f"{when}  signal {event.workflow_execution_signaled_event_attributes.signal_name}")
        elif kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
            lines.append(f"{when}  run started")
        elif kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
            # A run whose step failed returns normally, its state saying "failed": the server's "completed"
            # must not hide that.
            ended = _ended_state(event)
            failed = ended.get("status") == "failed"
            lines.append(
                f"{when}  run failed: {one_line(str(ended.get('error') or ''))}" if failed else f"{when}  run completed"
            )
        elif kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED:
            lines.append(f"{when}  run failed: {_innermost(event.workflow_execution_failed_event_attributes.failure)}")
        elif kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED:
            lines.append(f"{when}  run terminated: {event.workflow_execution_terminated_event_attributes.reason}")
        elif kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED:
            lines.append(f"{when}  run cancelled")
    return lines
