"""`bound_event`: an event as the run log keeps it — JSON text of a bounded size, whatever the event held.

Why bounded: a run publishes every event it prints (tool calls, turns, questions …) for as long as it runs, and
the log lives beside its transcripts for as long as they are kept. A tool's output is already in the transcript;
copying it again would double the store and make every reader of the log (a status, a page) pull megabytes. So
long strings are cut (with how much was cut), a ``tool_result``'s text to a short excerpt, deep or wide values
are summarised, and what is not JSON becomes its ``str``.
"""

from __future__ import annotations

import json
import math
from typing import Any

from .._shared.json_text import dumps

__all__ = ["MAX_EVENT_CHARS", "MAX_STRING_CHARS", "MAX_TOOL_OUTPUT_CHARS", "bound_event", "cut"]

MAX_STRING_CHARS = 2000  # any one string value
MAX_TOOL_OUTPUT_CHARS = 300  # the text of a tool's result: the transcript has all of it
MAX_EVENT_CHARS = 16_000  # the whole event as JSON text
_MAX_ITEMS = 50  # of one list or object
_MAX_DEPTH = 6


def cut(text: str, limit: int) -> str:
    """``text`` if it fits in ``limit`` characters, else its head and a note of how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit} more characters]"


def _bounded(value: Any, limit: int, depth: int) -> Any:
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        return cut(value, limit)
    if depth >= _MAX_DEPTH:
        return cut(json.dumps(value, default=str, ensure_ascii=False), 200)
    if isinstance(value, dict):
        items = list(value.items())
        out = {str(k): _bounded(v, limit, depth + 1) for k, v in items[:_MAX_ITEMS]}
        if len(items) > _MAX_ITEMS:
            out["…"] = f"{len(items) - _MAX_ITEMS} more keys"
        return out
    if isinstance(value, list | tuple):
        seq = [_bounded(v, limit, depth + 1) for v in list(value)[:_MAX_ITEMS]]
        if len(value) > _MAX_ITEMS:
            seq.append(f"… {len(value) - _MAX_ITEMS} more items")
        return seq
    return cut(str(value), limit)


def bound_event(event: Any) -> str:
    """``event`` (a JSON object, as ``flower --json`` prints it; anything else is kept as its text) as JSON text of at most `MAX_EVENT_CHARS`.

    A ``tool_result``'s ``text`` keeps `MAX_TOOL_OUTPUT_CHARS`; every other string `MAX_STRING_CHARS`. An event
    still too large keeps its ``kind``, ``tool``, ``subagent``, a cut ``text`` and its payload's scalar values.
    """
    if not isinstance(event, dict):
        event = {"kind": "unknown", "text": str(event)}
    limited = _bounded(event, MAX_STRING_CHARS, 0)
    if event.get("kind") == "tool_result" and isinstance(limited.get("text"), str):
        limited["text"] = cut(event["text"], MAX_TOOL_OUTPUT_CHARS)
    text = dumps(limited)
    if len(text) <= MAX_EVENT_CHARS:
        return text
    payload = limited.get("payload") if isinstance(limited.get("payload"), dict) else {}
    slim = {k: limited[k] for k in ("kind", "tool", "subagent") if k in limited}
    slim["text"] = cut(str(limited.get("text", "")), MAX_TOOL_OUTPUT_CHARS)
    slim["payload"] = {
        k: cut(v, 200) if isinstance(v, str) else v
        for k, v in payload.items()
        if v is None or isinstance(v, bool | int | float | str)
    }
    slim["payload"]["truncated"] = True
    return dumps(slim)
