"""Reading Claude Code transcript entries, and copy-on-write edits of them.

Rewriting never mutates its input. An entry that changes is rebuilt along the path to the change (entry →
message → content list → block); every other entry is passed through as the same object, which is what keeps
a layered load of a 20 MB session cheap. Treat the output as read-only, or copy it before editing.

Entries are the JSON objects the SDK hands a store, so they are plain ``dict``s and ``list``s; the hot loops
test ``type(x) is dict`` rather than ``isinstance(x, Mapping)``, whose ABC check costs more than the rest of a
layered load's per-entry work.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, TypeVar

__all__ = ["Entry", "REMOVE", "all_but_newest", "block_text", "blocks", "is_protected", "replace_blocks", "tool_result_blocks", "tool_use_blocks"]

Entry = Mapping[str, Any]
T = TypeVar("T")


def is_protected(entry: Entry) -> bool:
    """Compact summaries and meta entries are the only record of compacted history: never rewritten."""
    return bool(entry.get("isCompactSummary") or entry.get("isMeta"))


def blocks(entry: Entry) -> list[Any]:
    """The content blocks of an entry's message (an empty list for string content or no message)."""
    message = entry.get("message")
    if type(message) is not dict:
        return []
    content = message.get("content")
    return content if type(content) is list else []


def tool_use_blocks(entry: Entry) -> Iterator[dict[str, Any]]:
    for block in blocks(entry):
        if type(block) is dict and block.get("type") == "tool_use":
            yield block


def tool_result_blocks(entry: Entry) -> Iterator[tuple[int, dict[str, Any]]]:
    for index, block in enumerate(blocks(entry)):
        if type(block) is dict and block.get("type") == "tool_result":
            yield index, block


def block_text(block: Mapping[str, Any]) -> str | None:
    """The text of a tool_result, or ``None`` when it must not be replaced (images, documents, no text)."""
    content = block.get("content")
    if type(content) is str:
        return content
    if type(content) is not list:
        return None
    texts: list[str] = []
    for part in content:
        if type(part) is not dict:
            return None
        kind = part.get("type")
        if kind == "image" or kind == "document":
            return None
        if kind == "text" and type(part.get("text")) is str:
            texts.append(part["text"])
    return "".join(texts) if texts else None


def replace_blocks(entry: Entry, new_blocks: Sequence[Any], **entry_changes: Any) -> dict[str, Any]:
    """A copy of ``entry`` whose message content is ``new_blocks`` (and with ``entry_changes`` applied)."""
    out = dict(entry)
    message = dict(entry["message"])
    message["content"] = list(new_blocks)
    out["message"] = message
    for name, value in entry_changes.items():
        if value is REMOVE:
            out.pop(name, None)
        else:
            out[name] = value
    return out


class _Remove:
    def __repr__(self) -> str:
        return "REMOVE"


REMOVE: Any = _Remove()


def all_but_newest(items: Sequence[T], keep: int) -> Sequence[T]:
    """``items`` without its last ``keep`` (all of them when ``keep <= 0``; none when there are fewer).

    Not ``items[: len(items) - keep]``: with fewer items than ``keep`` that index goes negative and the slice
    quietly takes items from the front — 3 results with keep_recent=5 would still trim one.
    """
    if keep <= 0:
        return items
    return items[: max(len(items) - keep, 0)]
