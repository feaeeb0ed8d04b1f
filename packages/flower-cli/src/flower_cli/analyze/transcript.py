"""Reading one stored Claude Code transcript into `ThreadStats`: turns with their usage, tool calls, the
characters of work, spill and trim pointers, and the marks between turns. Pure: entries in, numbers out.

What a transcript looks like (Claude Code 2.1.x, as mirrored into the session store): one ``assistant`` entry
per content block of a model reply, all carrying the reply's ``message.id`` and ``message.usage``; ``user``
entries carry prompts (a string or text blocks), tool results, or a ``<task-notification>`` when a
background worker finishes; ``isMeta`` user entries are system reminders; ``<synthetic>`` assistant entries
are written by the harness, not the model (``isApiErrorMessage`` for a failed request, "No response
requested." on a resume); everything else (attachments, queue operations, cost state) is bookkeeping.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from string import Formatter
from typing import Any

from .model import Mark, ThreadStats, Turn

__all__ = ["entry_time", "thread_stats", "trim_pointers", "within"]

_NOTIFICATION = "<task-notification>"
_SPILL_NAME = re.compile(r"(?<![0-9a-f])([0-9a-f]{16}(?:[0-9a-f]{48})?\.txt)")


def entry_time(entry: Mapping[str, Any]) -> float | None:
    """The entry's ``timestamp`` (ISO 8601) as epoch seconds, or None."""
    stamp = entry.get("timestamp")
    if not isinstance(stamp, str):
        return None
    try:
        return datetime.fromisoformat(stamp).timestamp()
    except ValueError:
        return None


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _blocks(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [b for b in content if isinstance(b, Mapping)]
    return []


def _result_text(block: Mapping[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping) and p.get("type") == "text")
    return ""


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _trim_pattern() -> re.Pattern[str]:
    """A regex for flower_stores' trim pointer, built from its own ``TrimPolicy.text`` (one owner of the format)."""
    from flower_stores import TrimPolicy

    pattern = ""
    for literal, field_name, _spec, _conversion in Formatter().parse(TrimPolicy().text):
        pattern += re.escape(literal)
        if field_name == "chars":
            pattern += r"(?P<chars>\d[\d,]*)"
        elif field_name is not None:
            pattern += r".+?"
    return re.compile(pattern)


_TRIM: list[re.Pattern[str]] = []


def trim_pointers(text: str) -> list[int]:
    """The original sizes of the results that trim pointers (flower_stores' ``TrimPolicy.text``) stand for."""
    if not _TRIM:
        _TRIM.append(_trim_pattern())
    return [int(m.group("chars").replace(",", "")) for m in _TRIM[0].finditer(text)]


class _Reader:
    """Walks one transcript in order; `thread_stats` is its only user."""

    def __init__(self, name: str) -> None:
        from flower_workbench import spill_pointers

        self.spill_pointers = spill_pointers
        self.stats = ThreadStats(name=name)
        self._turns: dict[str, int] = {}  # message id -> position in stats.turns

    def assistant(self, entry: Mapping[str, Any], message: Mapping[str, Any]) -> None:
        stats = self.stats
        if entry.get("isApiErrorMessage"):
            stats.api_errors += 1
            stats.marks.append(Mark("error", len(stats.turns), _first_text(message)[:120]))
            return
        if message.get("model") == "<synthetic>":
            return  # written by the harness ("No response requested."), not a model call
        blocks = _blocks(message)
        calls = sum(1 for b in blocks if b.get("type") == "tool_use")
        for block in blocks:
            kind = block.get("type")
            if kind == "text":
                stats.chars += len(str(block.get("text", "")))
            elif kind == "tool_use":
                called = _compact(block.get("input", {}))
                stats.chars += len(called)
                for name in set(_SPILL_NAME.findall(called)):
                    stats.files_named[name] = stats.files_named.get(name, 0) + 1
            elif kind == "thinking":
                stats.chars += len(str(block.get("thinking", "")))
        stats.tool_calls += calls
        raw_usage = message.get("usage")
        usage: Mapping[str, Any] = raw_usage if isinstance(raw_usage, Mapping) else {}
        key = str(message.get("id") or entry.get("uuid") or f"#{len(stats.turns)}")
        at = self._turns.get(key)
        if at is None:
            self._turns[key] = len(stats.turns)
            stats.turns.append(self._turn(len(stats.turns) + 1, key, entry, usage, calls))
        else:  # another content block of the same reply: same usage (the last one written wins), more calls
            old = stats.turns[at]
            stats.turns[at] = self._turn(old.index, key, entry, usage, old.tool_calls + calls, old.timestamp)

    @staticmethod
    def _turn(
        index: int, key: str, entry: Mapping[str, Any], usage: Mapping[str, Any], calls: int, stamp: float | None = None
    ) -> Turn:
        return Turn(
            index=index,
            message_id=key,
            timestamp=stamp if stamp is not None else entry_time(entry),
            input_tokens=_int(usage.get("input_tokens")),
            cache_read_input_tokens=_int(usage.get("cache_read_input_tokens")),
            cache_creation_input_tokens=_int(usage.get("cache_creation_input_tokens")),
            output_tokens=_int(usage.get("output_tokens")),
            tool_calls=calls,
        )

    def user(self, entry: Mapping[str, Any], message: Mapping[str, Any]) -> None:
        if entry.get("isMeta"):
            return  # system reminders: the harness's, not the work's
        stats = self.stats
        prompt = False
        for block in _blocks(message):
            kind = block.get("type")
            if kind == "tool_result":
                text = _result_text(block)
                stats.chars += len(text)
                # What a pointer keeps out: the output's full size less what the model still reads instead.
                pointers = self.spill_pointers(text)
                spilled = [size for size, _path in pointers]
                stats.spill_files.update(path.rsplit("/", 1)[-1] for _size, path in pointers)
                if spilled:
                    stats.spilled += len(spilled)
                    stats.spilled_chars += sum(spilled)
                    stats.spilled_kept_out += max(sum(spilled) - len(text), 0)
                trimmed = trim_pointers(text)
                if trimmed:
                    stats.trimmed += len(trimmed)
                    stats.trimmed_kept_out += max(sum(trimmed) - len(text), 0)
            elif kind == "text":
                text = str(block.get("text", ""))
                if text.lstrip().startswith(_NOTIFICATION):
                    stats.notifications += 1
                    stats.chars += len(text)  # a worker's report enters this thread's context like a tool result
                    stats.marks.append(Mark("notification", len(stats.turns), "a worker reported back"))
                else:
                    prompt = True
        if prompt:
            stats.prompts += 1
            if stats.prompts > 1:
                stats.marks.append(Mark("resume", len(stats.turns), _first_text(message)[:120]))


def _first_text(message: Mapping[str, Any]) -> str:
    for block in _blocks(message):
        if block.get("type") == "text":
            return " ".join(str(block.get("text", "")).split())
    return ""


def thread_stats(name: str, entries: Iterable[Mapping[str, Any]]) -> ThreadStats:
    """The numbers of one transcript (main thread or worker), its entries in stored order."""
    reader = _Reader(name)
    for entry in entries:
        message = entry.get("message")
        if not isinstance(message, Mapping):
            continue
        kind = entry.get("type")
        if kind == "assistant":
            reader.assistant(entry, message)
        elif kind == "user":
            reader.user(entry, message)
    return reader.stats


def within(entries: Sequence[Mapping[str, Any]], start: float, end: float) -> list[Mapping[str, Any]]:
    """The entries stamped inside ``[start, end]`` (a step's run); bookkeeping without a stamp is dropped."""
    out: list[Mapping[str, Any]] = []
    for entry in entries:
        stamp = entry_time(entry)
        if stamp is not None and start <= stamp <= end:
            out.append(entry)
    return out
