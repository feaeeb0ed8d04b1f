"""A stable, flat event stream over the SDK's messages, so a UI never imports SDK types.

``normalize(message)`` turns one SDK message into zero or more `Event`s. Synthetic API errors (the
harness's own "API Error: …" assistant rows) become ``kind="error"`` — never ``text`` — so they can not
leak into a step's answer or the next step's prompt. The ``tool_result`` of a call that never ran because it
was refused carries ``payload["denied"]`` (what refused it, the tool), so a UI can say so in its own words.

Background workers: the harness runs Agent-tool subagents in the background and wakes the main thread
with a task notification when one stops, so one query has several main-thread turns, each ending in an SDK
``ResultMessage`` — a ``turn`` event here. The step's single ``result`` event comes from the Runtime when the
last turn is over. `Workers` tags every event of a worker with ``payload["worker"]`` (its id — the task id,
which is also the ``subagents/agent-<id>`` key of its transcript — and its description) and knows which
workers are still live.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from ._guards import guard_kind

__all__ = [
    "Event",
    "EventKind",
    "EventSink",
    "TERMINAL_STATUSES",
    "Workers",
    "is_synthetic_error",
    "normalize",
    "usage_context",
]

EventKind = Literal[
    "text",
    "thinking",
    "prompt",
    "tool_call",
    "tool_result",
    "result",
    "turn",
    "error",
    "reset",
    "system",
    "task",
    "unknown",
    "retry",
    "step",
    "handoff",
    "ask",
    "notice",
    "aside",
    "limit",
]


@dataclass(frozen=True)
class Event:
    """``kind`` says what happened; ``text`` is the human-readable part; ``tool`` names the tool of a call.

    ``payload`` holds JSON-safe details (ids, costs, token counts); ``subagent`` is true for events from an
    Agent-tool worker's own transcript. UIs should keep an ``else`` branch: new kinds may appear.
    """

    kind: EventKind
    text: str = ""
    tool: str = ""
    payload: dict[str, Any] = field(default_factory=dict)
    subagent: bool = False

    def __str__(self) -> str:
        if self.kind == "tool_call":
            return f"[{self.tool}] {self.text}"
        return self.text or f"<{self.kind}>"

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "text": self.text,
            "tool": self.tool,
            "subagent": self.subagent,
            "payload": self.payload,
        }


# What a step tells of itself: every event, as it happens (a UI, a log, a publisher for other processes).
EventSink = Callable[[Event], Any]


def usage_context(usage: dict[str, Any] | None) -> int:
    """Tokens the model saw this turn: input + cache read + cache creation."""
    if not isinstance(usage, dict):
        return 0
    total = 0
    for key in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"):
        value = usage.get(key)
        if isinstance(value, int):
            total += value
    return total


def is_synthetic_error(message: Any) -> bool:
    """The harness's own error row (model ``<synthetic>`` / ``isApiErrorMessage``), object or raw dict."""
    if isinstance(message, dict):
        inner = message.get("message")
        if not isinstance(inner, dict):
            inner = {}
        return bool(message.get("isApiErrorMessage")) or inner.get("model") == "<synthetic>"
    return getattr(message, "model", None) == "<synthetic>"


def _summary(name: str, tool_input: dict[str, Any]) -> str:
    for key in ("command", "file_path", "pattern", "path", "url", "query", "description", "prompt"):
        value = tool_input.get(key)
        if isinstance(value, str) and value:
            return " ".join(value.split())[:200]
    return ""


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, dict) and isinstance(b.get("text"), str))
    return ""


def _sdk() -> Any:
    import claude_agent_sdk  # lazy: view and reach read events without the SDK (a second of import)

    return claude_agent_sdk


def normalize(message: Any) -> list[Event]:
    sdk = _sdk()
    if isinstance(message, sdk.AssistantMessage):
        return _assistant(sdk, message)
    if isinstance(message, sdk.UserMessage):
        return _user(sdk, message)
    if isinstance(message, sdk.ResultMessage):
        # One main-thread turn is over; the step may go on (a worker's notification wakes the main thread).
        return [
            Event(
                "turn",
                message.subtype,
                payload={
                    "session_id": message.session_id,
                    # The harness process's running total, not this turn's cost: never add these up.
                    "total_cost_usd": message.total_cost_usd or 0.0,
                    "num_turns": message.num_turns,
                    "is_error": message.is_error,
                    "api_error_status": message.api_error_status,
                    "text": message.result or "",
                },
            )
        ]
    if isinstance(
        message, (sdk.TaskStartedMessage, sdk.TaskProgressMessage, sdk.TaskNotificationMessage, sdk.TaskUpdatedMessage)
    ):
        return [_task(message)]
    if isinstance(message, sdk.SystemMessage):
        data = message.data if isinstance(message.data, dict) else {}
        if message.subtype in ("compact_boundary", "microcompact_boundary"):
            meta = data.get("compact_metadata") or data.get("microcompact_metadata") or {}
            pre, post = meta.get("pre_tokens"), meta.get("post_tokens")
            micro = message.subtype.startswith("micro")
            label = "micro-compaction" if micro else "compaction"
            text = f"{label} ({meta.get('trigger', '?')}) {pre} -> {post} tokens" if pre is not None else label
            return [
                Event(
                    "reset",
                    text,
                    payload={"trigger": meta.get("trigger"), "pre_tokens": pre, "post_tokens": post, "micro": micro},
                )
            ]
        payload = {"subtype": message.subtype, "session_id": data.get("session_id")}
        if message.subtype == "api_retry":  # the harness retries a request itself: which attempt, and why
            payload.update(
                {k: data.get(k) for k in ("attempt", "max_retries", "retry_delay_ms", "error_status", "error")}
            )
        return [Event("system", message.subtype, payload=payload)]
    if isinstance(message, sdk.ConversationResetMessage):
        return [Event("reset", "conversation reset", payload={"subtype": "conversation_reset"})]
    if isinstance(message, sdk.StreamEvent):
        return []
    return [Event("unknown", type(message).__name__)]


TERMINAL_STATUSES = frozenset({"completed", "failed", "stopped", "killed"})
# Task types that are delegated agent work (the ones the harness wakes the main thread for); a background
# shell is a task too, but it may run forever and is not a worker.
_WORKER_TASK_TYPES = frozenset({"local_agent", "local_workflow"})


def _task(message: Any) -> Event:
    kind = type(message).__name__
    payload: dict[str, Any] = {"kind": kind, "task_id": getattr(message, "task_id", "") or ""}
    tool_use_id = getattr(message, "tool_use_id", None)
    if tool_use_id:
        payload["tool_use_id"] = tool_use_id
    text = ""
    if kind == "TaskStartedMessage":
        text = message.description or ""
        payload["task_type"] = message.task_type
    elif kind == "TaskProgressMessage":
        text = message.description or ""
        payload["last_tool_name"] = message.last_tool_name
    elif kind == "TaskNotificationMessage":
        text = message.summary or ""
        payload["status"] = message.status
        payload["output_file"] = message.output_file
    elif kind == "TaskUpdatedMessage":
        patch = message.patch if isinstance(message.patch, dict) else {}
        status = message.status or patch.get("status")
        if status:
            payload["status"] = status
    return Event("task", text, payload=payload)


class Workers:
    """Which background worker each event belongs to, and which workers are still running.

    Feed it every event of a step in order: `annotate` returns the event with ``payload["worker"] =
    {"id", "description"}`` added to a worker's own events and to its task events. The Agent call names the
    description, the task-started frame links the call to the task id, and a worker's messages point at the
    call through ``parent_tool_use_id``.
    """

    def __init__(self) -> None:
        self._calls: dict[str, str] = {}  # Agent tool_use id -> description
        self._task_of_call: dict[str, str] = {}  # Agent tool_use id -> task id
        self._call_of_task: dict[str, str] = {}
        self.tasks: dict[str, dict[str, str]] = {}  # task id -> {"id", "description", "status"}, in start order

    @property
    def live(self) -> dict[str, str]:
        """Task id -> description of the workers that have not finished."""
        return {tid: t["description"] for tid, t in self.tasks.items() if t["status"] not in TERMINAL_STATUSES}

    def retire(self, status: str = "stopped") -> None:
        """Mark every live worker ``status``: its harness process is gone (a handoff ended the session)."""
        for task in self.tasks.values():
            if task["status"] not in TERMINAL_STATUSES:
                task["status"] = status

    def live_names(self) -> list[str]:
        """Each live worker's description (its task id when it has none), in start order."""
        return [description or tid for tid, description in self.live.items()]

    def live_list(self) -> list[dict[str, str]]:
        return [{"id": tid, "description": desc} for tid, desc in self.live.items()]

    def summary(self) -> list[dict[str, str]]:
        return [dict(t) for t in self.tasks.values()]

    def _worker(self, call_id: str | None, task_id: str | None = None) -> dict[str, str] | None:
        if call_id is None and task_id:
            call_id = self._call_of_task.get(task_id)
        if call_id is None:
            return None
        tid = task_id or self._task_of_call.get(call_id) or call_id
        return {"id": tid, "description": self._calls.get(call_id, "")}

    def annotate(self, event: Event) -> Event:
        p = event.payload
        if event.kind == "tool_call" and event.tool in ("Agent", "Task") and isinstance(p.get("id"), str):
            raw = p.get("input")
            inp: dict[str, Any] = raw if isinstance(raw, dict) else {}
            self._calls[p["id"]] = " ".join(str(inp.get("description") or inp.get("prompt") or "").split())[:80]
        if event.kind == "task":
            return self._task_event(event)
        if event.subagent:
            parent = p.get("parent_tool_use_id")
            worker = self._worker(parent if isinstance(parent, str) else None)
            if worker:
                return replace(event, payload={**p, "worker": worker})
        return event

    def _task_event(self, event: Event) -> Event:
        p = event.payload
        tid = str(p.get("task_id") or "")
        raw_call = p.get("tool_use_id")
        call = raw_call if isinstance(raw_call, str) and raw_call else None
        if call is not None and tid:
            self._task_of_call[call] = tid
            self._call_of_task[tid] = call
            self._calls.setdefault(call, event.text)
        status = p.get("status")
        if p.get("kind") == "TaskStartedMessage" and tid and p.get("task_type") in (*_WORKER_TASK_TYPES, None):
            description = self._calls.get(call, event.text) if call is not None else event.text
            self.tasks[tid] = {"id": tid, "description": description, "status": "running"}
        elif isinstance(status, str) and tid in self.tasks:
            self.tasks[tid]["status"] = status
        worker = self._worker(call, tid or None)
        return replace(event, payload={**p, "worker": worker}) if worker else event


def _assistant(sdk: Any, message: Any) -> list[Event]:
    subagent = message.parent_tool_use_id is not None
    base: dict[str, Any] = {"subagent": subagent, "model": message.model}
    if subagent:
        base["parent_tool_use_id"] = message.parent_tool_use_id
    if is_synthetic_error(message) or (
        message.error and not any(isinstance(b, sdk.ToolUseBlock) for b in message.content)
    ):
        text = " ".join(b.text for b in message.content if isinstance(b, sdk.TextBlock)).strip()
        return [
            Event(
                "error",
                text or str(message.error),
                payload={**base, "synthetic": True, "error": message.error},
                subagent=subagent,
            )
        ]
    context = usage_context(message.usage)
    if context:
        base["context"] = context
        # One API call arrives as one message per content block, each with the call's usage: the id lets a
        # reader (the page's context curve) count the call once, as `flower analyze` does.
        message_id = getattr(message, "message_id", None)
        if message_id:
            base["message_id"] = message_id
    events: list[Event] = []
    for block in message.content:
        if isinstance(block, sdk.TextBlock):
            if block.text.strip():
                events.append(Event("text", block.text, payload=dict(base), subagent=subagent))
        elif isinstance(block, sdk.ThinkingBlock):
            if block.thinking.strip():
                events.append(Event("thinking", block.thinking, payload=dict(base), subagent=subagent))
        elif isinstance(block, sdk.ToolUseBlock):
            payload = {**base, "id": block.id, "input": block.input}
            events.append(
                Event(
                    "tool_call", _summary(block.name, block.input), tool=block.name, payload=payload, subagent=subagent
                )
            )
    if not events and context:
        # Keep the context reading even when a turn carried nothing to show.
        events.append(Event("system", "usage", payload=dict(base), subagent=subagent))
    return events


def _user(sdk: Any, message: Any) -> list[Event]:
    subagent = message.parent_tool_use_id is not None
    base: dict[str, Any] = {"subagent": subagent}
    if subagent:
        base["parent_tool_use_id"] = message.parent_tool_use_id
    if isinstance(message.content, str):
        return [Event("prompt", message.content, payload=base, subagent=subagent)]
    events: list[Event] = []
    for block in message.content:
        if isinstance(block, sdk.ToolResultBlock):
            text = _text_of(block.content)[:500]
            payload = {**base, "tool_use_id": block.tool_use_id, "is_error": bool(block.is_error)}
            denied = _denial(block, message.tool_use_result) if block.is_error else None
            if denied is not None:
                payload["denied"] = denied
            events.append(Event("tool_result", text, payload=payload, subagent=subagent))
        elif isinstance(block, sdk.TextBlock):
            events.append(Event("prompt", block.text, payload=dict(base), subagent=subagent))
    return events


# The harness's report of a call a PreToolUse hook refused (the Runtime's own walls among them).
_HOOK_REFUSAL = re.compile(r"PreToolUse:(?P<tool>[^\s:]+) hook error: (?P<reason>.*)", re.S)
# The tool named in the harness's own refusals ("Claude requested permissions to use X, …", "Permission to use X …").
_NAMED_TOOL = re.compile(r"(?:Claude requested permissions to use|Permission to use) (?P<tool>[\w.:-]+)")
_DENIAL_KINDS = {"user-rejected": "not-allowed", "permission-rule": "rule"}


def _denial(block: Any, tool_use_result: Any) -> dict[str, str] | None:
    """How a tool call was refused — ``{"kind", "tool"?, "reason"?}`` — or None when it ran (or was interrupted).

    Kinds: ``not-allowed`` (not among the role's allowed tools: the harness was not allowed to ask, or the
    role's whitelist refused it), ``delegated`` (the coordinator's wall: workers do that work), ``rule`` (a deny
    rule), ``hook`` (someone else's PreToolUse hook; ``reason`` is what it said), ``rejected`` (a person said
    no). The SDK passes no ``toolDenialKind`` on, so this reads the harness's words, the way
    `flower_stores.refusal` reads a stored transcript — which it asks first.
    """
    if isinstance(tool_use_result, dict):
        return None  # a tool's own structured output: whatever it says, the tool ran
    text = _text_of(block.content).lstrip()
    hook = _HOOK_REFUSAL.match(text)
    if hook is not None:
        reason = hook["reason"].strip()
        return {"kind": guard_kind(reason) or "hook", "tool": hook["tool"], "reason": reason}
    # Lazy: flower_stores loads the SDK, and view and reach read events without it.
    from flower_stores import INTERRUPT, USER_FEEDBACK, refusal

    result = {"type": "tool_result", "is_error": True, "content": text}
    kind = refusal({"toolUseResult": tool_use_result, "message": {"content": [result]}}, result)
    if kind is None or kind == INTERRUPT:
        return None
    denied = {"kind": "rejected" if kind == USER_FEEDBACK else _DENIAL_KINDS.get(kind, "rule")}
    named = _NAMED_TOOL.match(text)
    if named is not None:
        denied["tool"] = named["tool"]
    return denied
