"""A run's Temporal history as lines a person reads: each step's attempts, their worker, how each ended."""

from __future__ import annotations

from typing import Any

from temporalio.api.enums.v1 import EventType

__all__ = ["history_lines"]


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
            lines.append(f"{when}  {steps.get(attrs.scheduled_event_id, '?')}: failed: {attrs.failure.message}")
        elif kind == EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT:
            attrs = event.activity_task_timed_out_event_attributes
            lines.append(f"{when}  {steps.get(attrs.scheduled_event_id, '?')}: timed out: {attrs.failure.message}")
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
            lines.append(f"{when}  run completed")
        elif kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED:
            lines.append(f"{when}  run failed")
        elif kind == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED:
            lines.append(f"{when}  run cancelled")
    return lines
