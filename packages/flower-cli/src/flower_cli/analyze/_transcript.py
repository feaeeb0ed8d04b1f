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
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from string import Formatter
from typing import Any, TypeGuard

from flower_stores import TrimPolicy
from flower_workbench import spill_pointers

from ._model import Mark, ThreadStats

__all__ = [
    "Span",
    "ThreadReader",
    "entry_time",
    "read_thread",
    "thread_stats",
    "trim_pointers",
    "window_stats",
    "within",
]

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


# The walk below runs over every entry of every session, so it tests ``type(x) is dict`` first (what JSON gives)
# and falls back to the slower ABC check for other mappings.
def _is_map(value: Any) -> TypeGuard[Mapping[str, Any]]:
    return type(value) is dict or isinstance(value, Mapping)


def _int(value: Any) -> int:
    return value if type(value) is int and value > 0 else 0  # not bool, not negative


def _str(value: Any) -> str:
    return value if type(value) is str else str(value)


def _blocks(message: Mapping[str, Any]) -> Sequence[Any]:
    """The message's content blocks (a string is one text block); the caller skips the ones that are no mapping."""
    content = message.get("content")
    if type(content) is list:
        return content
    if isinstance(content, str):
        return ({"type": "text", "text": content},)
    return content if isinstance(content, list) else ()


def _result_text(block: Mapping[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping) and p.get("type") == "text")
    return ""


# Built once: json.dumps with options builds a new encoder per call, which costs more than encoding a small input.
_compact = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def _trim_pattern() -> tuple[str, re.Pattern[str]]:
    """A regex for flower_stores' trim pointer, built from its own ``TrimPolicy.text`` (one owner of the format),
    and the literal it starts with: a plain substring test rules out most results faster than the regex."""
    pattern = ""
    lead: str | None = None
    for literal, field_name, _spec, _conversion in Formatter().parse(TrimPolicy().text):
        if lead is None:
            lead = literal
        pattern += re.escape(literal)
        if field_name == "chars":
            pattern += r"(?P<chars>\d[\d,]*)"
        elif field_name is not None:
            pattern += r".+?"
    return lead or "", re.compile(pattern)


_TRIM: list[tuple[str, re.Pattern[str]]] = []


def trim_pointers(text: str) -> list[int]:
    """The original sizes of the results that trim pointers (flower_stores' ``TrimPolicy.text``) stand for."""
    if not _TRIM:
        _TRIM.append(_trim_pattern())
    lead, pattern = _TRIM[0]
    if lead not in text:
        return []
    return [int(m.group("chars").replace(",", "")) for m in pattern.finditer(text)]


class _Reader:
    """The numbers of one transcript, entry by entry; `ThreadReader` walks it."""

    def __init__(self, name: str) -> None:
        self.stats = ThreadStats(name=name)
        self._turns: dict[str, int] = {}  # message id -> position in stats.turns

    def assistant(self, entry: Mapping[str, Any], message: Mapping[str, Any], stamp: float | None) -> None:
        stats = self.stats
        if entry.get("isApiErrorMessage"):
            stats.api_errors += 1
            stats.marks.append(Mark("error", len(stats.turns), _first_text(message)[:120]))
            return
        if message.get("model") == "<synthetic>":
            return  # written by the harness ("No response requested."), not a model call
        calls = chars = 0
        for block in _blocks(message):
            if type(block) is not dict and not _is_map(block):
                continue
            kind = block.get("type")
            if kind == "tool_use":
                calls += 1
                called = _compact(block.get("input", {}))
                chars += len(called)
                if ".txt" in called:
                    for name in set(_SPILL_NAME.findall(called)):
                        stats.files_named[name] = stats.files_named.get(name, 0) + 1
            elif kind == "text":
                chars += len(_str(block.get("text", "")))
            elif kind == "thinking":
                chars += len(_str(block.get("thinking", "")))
        stats.chars += chars
        stats.tool_calls += calls
        usage = message.get("usage")
        if type(usage) is not dict and not _is_map(usage):
            usage = {}
        get = usage.get
        numbers = (
            _int(get("input_tokens")),
            _int(get("cache_read_input_tokens")),
            _int(get("cache_creation_input_tokens")),
            _int(get("output_tokens")),
        )
        turns = stats.turns
        key = str(message.get("id") or entry.get("uuid") or f"#{len(turns)}")
        at = self._turns.get(key)
        if at is None:
            self._turns[key] = len(turns)
            turns.append(*numbers, calls, stamp)
        else:  # another content block of the same reply: same usage (the last one written wins), more calls
            turns.input[at], turns.cache_read[at], turns.cache_creation[at], turns.output[at] = numbers
            turns.tool_calls[at] += calls

    def user(self, entry: Mapping[str, Any], message: Mapping[str, Any]) -> None:
        if entry.get("isMeta"):
            return  # system reminders: the harness's, not the work's
        stats = self.stats
        prompt = False
        for block in _blocks(message):
            if type(block) is not dict and not _is_map(block):
                continue
            kind = block.get("type")
            if kind == "tool_result":
                text = _result_text(block)
                stats.chars += len(text)
                # What a pointer keeps out: the output's full size less what the model still reads instead.
                pointers = spill_pointers(text)
                if pointers:
                    spilled = [size for size, _path in pointers]
                    stats.spill_files.update(path.rsplit("/", 1)[-1] for _size, path in pointers)
                    stats.spilled += len(spilled)
                    stats.spilled_chars += sum(spilled)
                    stats.spilled_kept_out += max(sum(spilled) - len(text), 0)
                trimmed = trim_pointers(text)
                if trimmed:
                    stats.trimmed += len(trimmed)
                    stats.trimmed_kept_out += max(sum(trimmed) - len(text), 0)
            elif kind == "text":
                text = _str(block.get("text", ""))
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
        if _is_map(block) and block.get("type") == "text":
            return " ".join(str(block.get("text", "")).split())
    return ""


@dataclass(frozen=True, slots=True)
class Span:
    """When a thread's counted entries (the ones `thread_stats` reads) were written: the earliest and latest
    stamps, and whether any had none."""

    first: float | None
    last: float | None
    unstamped: bool

    def inside(self, start: float, end: float) -> bool:
        """Whether every counted entry is stamped inside ``[start, end]``."""
        if self.unstamped:
            return False
        return self.first is None or (self.last is not None and start <= self.first and self.last <= end)


class ThreadReader:
    """Reads one transcript as its entries pass through: `through` yields each entry right after reading it,
    so the caller can feed the very same pass to another reader (analyze's "on resume" estimate) while each
    freshly parsed entry is still in the cache — one walk of a transcript instead of one per question.
    `stats` and `span` are complete once `through` is exhausted."""

    def __init__(self, name: str) -> None:
        self._reader = _Reader(name)
        self.span = Span(None, None, False)

    @property
    def stats(self) -> ThreadStats:
        return self._reader.stats

    def through(
        self, entries: Iterable[Mapping[str, Any]], keep: list[Mapping[str, Any]] | None = None
    ) -> Iterator[Mapping[str, Any]]:
        """Every entry of ``entries``, read; and appended to ``keep`` when one is given (the caller's copy)."""
        assistant, user, parse = self._reader.assistant, self._reader.user, datetime.fromisoformat
        kept = keep.append if keep is not None else None
        first: float | None = None
        last: float | None = None
        unstamped = False
        # This loop runs over every entry of a run: `entry_time` is inlined and the span kept in locals.
        for entry in entries:
            if kept is not None:
                kept(entry)
            message = entry.get("message")
            kind = entry.get("type")
            if not (kind == "assistant" or kind == "user") or (type(message) is not dict and not _is_map(message)):
                yield entry
                continue
            stamp = entry.get("timestamp")
            at: float | None = None
            if isinstance(stamp, str):
                try:
                    at = parse(stamp).timestamp()
                except ValueError:
                    pass
            if at is None:
                unstamped = True
            elif first is None or last is None:
                first = last = at
            elif at < first:
                first = at
            elif at > last:
                last = at
            if kind == "assistant":
                assistant(entry, message, at)
            else:
                user(entry, message)
            yield entry
        self.span = Span(first, last, unstamped)


def read_thread(name: str, entries: Iterable[Mapping[str, Any]]) -> tuple[ThreadStats, Span]:
    """`thread_stats`, and the `Span` of the entries it read (so a step's window can often reuse the numbers)."""
    reader = ThreadReader(name)
    for _ in reader.through(entries):
        pass
    return reader.stats, reader.span


def thread_stats(name: str, entries: Iterable[Mapping[str, Any]]) -> ThreadStats:
    """The numbers of one transcript (main thread or worker), its entries in stored order."""
    return read_thread(name, entries)[0]


def within(entries: Sequence[Mapping[str, Any]], start: float, end: float) -> list[Mapping[str, Any]]:
    """The entries stamped inside ``[start, end]`` (a step's run); bookkeeping without a stamp is dropped."""
    out: list[Mapping[str, Any]] = []
    for entry in entries:
        stamp = entry_time(entry)
        if stamp is not None and start <= stamp <= end:
            out.append(entry)
    return out


def window_stats(
    whole: ThreadStats, span: Span, entries: Sequence[Mapping[str, Any]], start: float, end: float
) -> ThreadStats:
    """``thread_stats`` of the entries `within` ``[start, end]``, given ``read_thread(entries)`` = (whole, span).

    When every entry the numbers come from is stamped inside the window — a session run by one step, the
    usual case — the numbers are ``whole``'s, and the transcript is not walked again.
    """
    return whole if span.inside(start, end) else thread_stats(whole.name, within(entries, start, end))
