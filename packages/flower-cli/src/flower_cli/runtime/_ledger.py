"""The supervision ledger: which background workers a coordinator dispatched, and where each one got to.

Read from the transcripts in the store alone (a pure function: entries in, a ledger out; the input is never
changed), so a process that wakes after a crash knows what the one that died left running without asking the
model. A worker, by its Agent call, is one of:

- ``reported``: the coordinator's transcript holds its completion (a ``<task-notification>`` that is not the
  harness's "didn't finish before the previous session ended", or a synchronous Agent call's own result);
- ``finished``: its transcript ends with its final answer, which the coordinator never received;
- ``unfinished``: its transcript holds some of its turns, not the last;
- ``unstarted``: no turn of its own is stored (flower died between the dispatch and its first answer).

A worker flower already recovered has a recovery session of its own (see `_recovery`); when one is given, it
stands for the worker's progress, since it carries the worker's turns on.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["AGENT_TOOLS", "WorkerRecord", "WorkerState", "is_final", "worker_ledger", "notifications", "worker_key"]

Entry = Mapping[str, Any]
WorkerState = Literal["reported", "finished", "unfinished", "unstarted"]

AGENT_TOOLS = frozenset({"Agent", "Task"})  # the harness's dispatch tool (Task is its older name)
# The harness's own notice, on resume, for a worker the previous process left running: not a completion.
_LEFT_RUNNING = ("didn't finish before the previous session ended", "did not finish before the previous session")
# Statuses a notification ends a worker's story with (a "stopped" one only when it is not _LEFT_RUNNING).
_REPORTING = frozenset({"completed", "failed", "killed", "stopped"})
_AGENT_ID = re.compile(r"agentId:\s*([A-Za-z0-9_-]+)")
_NOTICE = re.compile(r"<task-notification>(.*?)(?:</task-notification>|\Z)", re.S)


@dataclass(frozen=True)
class WorkerRecord:
    """One dispatched worker: its Agent call (``call_id``, its input), the harness's id for it (``agent_id``, None
    when nothing names it yet) and where it got to (``state``; ``result`` is its final answer when finished).
    ``cwd`` is where it last worked (its worktree, when isolated); ``recovery`` is true when its progress is read
    from flower's recovery session rather than the harness's transcript of it; ``started`` when that transcript
    holds a turn of its own (a recovery then resumed it; without one, it was dispatched again)."""

    call_id: str
    agent_id: str | None
    description: str
    prompt: str
    agent_type: str | None
    isolation: str | None
    state: WorkerState
    result: str = ""
    cwd: str | None = None
    recovery: bool = False
    started: bool = False  # the harness's transcript of it holds a turn of its own

    @property
    def name(self) -> str:
        """How a person knows the worker: its description, else its id."""
        return self.description or self.agent_id or self.call_id


def worker_key(agent_id: str) -> str:
    """The store subpath of a worker's transcript under its coordinator's session."""
    return f"subagents/agent-{agent_id}"


def worker_ledger(
    main: Iterable[Entry],
    workers: Mapping[str, Sequence[Entry]],
    recoveries: Mapping[str, Sequence[Entry]] | None = None,
) -> list[WorkerRecord]:
    """The workers ``main`` (the coordinator's transcript) dispatched, in dispatch order.

    ``workers``: each worker's transcript by its agent id (the ``agent-<id>`` of its subpath); ``recoveries``:
    flower's recovery session of a worker by its Agent call id, where there is one.
    """
    calls: dict[str, dict[str, Any]] = {}
    agent_of_call: dict[str, str] = {}
    synchronous_done: set[str] = set()
    reported_ids: set[str] = set()
    for entry in main:
        if entry.get("isSidechain"):
            continue
        for block in _blocks(entry):
            kind = block.get("type")
            if kind == "tool_use" and block.get("name") in AGENT_TOOLS and isinstance(block.get("id"), str):
                tool_input = block.get("input")
                calls.setdefault(block["id"], dict(tool_input) if isinstance(tool_input, Mapping) else {})
            elif kind == "tool_result" and block.get("tool_use_id") in calls:
                call = str(block["tool_use_id"])
                agent_id = _launched_agent(entry, block)
                if agent_id:
                    agent_of_call[call] = agent_id
                elif not block.get("is_error"):
                    synchronous_done.add(call)  # a foreground call: its result is the worker's report
        if entry.get("type") == "user":
            for notice in notifications(_text(entry)):
                if _reports(notice):
                    reported_ids.update(v for v in (notice.get("task-id"), notice.get("tool-use-id")) if v)
    for agent_id, entries in workers.items():  # a worker the launch result never named (flower died in between)
        named = _metadata_call(entries)
        if named is not None and named in calls:
            agent_of_call.setdefault(named, agent_id)
    return [
        _record(
            call,
            tool_input,
            agent_of_call.get(call),
            workers,
            (recoveries or {}).get(call),
            reported=call in synchronous_done or call in reported_ids or agent_of_call.get(call) in reported_ids,
        )
        for call, tool_input in calls.items()
    ]


def _record(
    call: str,
    tool_input: Mapping[str, Any],
    agent_id: str | None,
    workers: Mapping[str, Sequence[Entry]],
    recovery: Sequence[Entry] | None,
    *,
    reported: bool,
) -> WorkerRecord:
    own = workers.get(agent_id, ()) if agent_id else ()
    progress = recovery if recovery else own
    state: WorkerState
    final = is_final(progress)
    if reported:
        state = "reported"
    elif final is not None:
        state = "finished"
    elif _has_turn(progress) or _has_message(recovery or ()):  # a recovery session is continued, never restarted
        state = "unfinished"
    else:
        state = "unstarted"
    return WorkerRecord(
        call_id=call,
        agent_id=agent_id,
        description=" ".join(str(tool_input.get("description") or "").split()),
        prompt=str(tool_input.get("prompt") or ""),
        agent_type=_str_or_none(tool_input.get("subagent_type")),
        isolation=_str_or_none(tool_input.get("isolation")),
        state=state,
        result=(final or "") if state == "finished" else "",
        cwd=_last_cwd(own),
        recovery=bool(recovery),
        started=_has_turn(own),
    )


def is_final(entries: Sequence[Entry]) -> str | None:
    """The final answer a transcript ends with (its last message: the assistant's, text and no tool call), or None."""
    last = None
    for entry in entries:
        if entry.get("type") in ("user", "assistant") and not entry.get("isMeta"):
            last = entry
    if last is None or last.get("type") != "assistant" or _synthetic(last):
        return None
    blocks = _blocks(last)
    if any(b.get("type") == "tool_use" for b in blocks):
        return None
    text = "".join(str(b.get("text") or "") for b in blocks if b.get("type") == "text").strip()
    return text or None


def notifications(text: str) -> list[dict[str, str]]:
    """Each ``<task-notification>`` in ``text`` as its fields (``task-id``, ``tool-use-id``, ``status``, …)."""
    out = []
    for body in _NOTICE.findall(text):
        fields = {
            name: value.strip()
            for name, value in re.findall(r"<([a-z-]+)>(.*?)</\1>", body, re.S)
            if name in ("task-id", "tool-use-id", "status", "summary", "result")
        }
        out.append(fields)
    return out


def _reports(notice: Mapping[str, str]) -> bool:
    """Does this notification end the worker's story for the coordinator (not the harness's left-running note)?"""
    if notice.get("status") not in _REPORTING:
        return False
    summary = notice.get("summary", "")
    return not any(phrase in summary for phrase in _LEFT_RUNNING)


def _launched_agent(entry: Entry, block: Mapping[str, Any]) -> str | None:
    """The agent id a background launch's tool result names (its structured result first, the text second)."""
    result = entry.get("toolUseResult")
    if isinstance(result, Mapping) and isinstance(result.get("agentId"), str):
        if result.get("isAsync") or result.get("status") == "async_launched":
            return str(result["agentId"])
        return None
    text = _content_text(block.get("content"))
    if "Async agent launched" not in text:
        return None
    found = _AGENT_ID.search(text)
    return found.group(1) if found else None


def _metadata_call(entries: Sequence[Entry]) -> str | None:
    for entry in entries:
        if entry.get("type") == "agent_metadata" and isinstance(entry.get("toolUseId"), str):
            return str(entry["toolUseId"])
    return None


def _has_turn(entries: Sequence[Entry]) -> bool:
    """Has the agent answered at least once (a stored assistant message that is not a synthetic error)?"""
    return any(e.get("type") == "assistant" and not _synthetic(e) for e in entries)


def _has_message(entries: Sequence[Entry]) -> bool:
    return any(e.get("type") in ("user", "assistant") for e in entries)


def _last_cwd(entries: Sequence[Entry]) -> str | None:
    for entry in reversed(entries):
        cwd = entry.get("cwd")
        if isinstance(cwd, str) and cwd:
            return cwd
    return None


def _synthetic(entry: Entry) -> bool:
    message = entry.get("message")
    return bool(entry.get("isApiErrorMessage")) or (
        isinstance(message, Mapping) and message.get("model") == "<synthetic>"
    )


def _blocks(entry: Entry) -> list[Mapping[str, Any]]:
    message = entry.get("message")
    content = message.get("content") if isinstance(message, Mapping) else None
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content or () if isinstance(b, Mapping)] if isinstance(content, list) else []


def _text(entry: Entry) -> str:
    return "\n".join(str(b.get("text") or "") for b in _blocks(entry) if b.get("type") == "text")


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(b.get("text") or "") for b in content if isinstance(b, Mapping))
    return ""


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
