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

__all__ = [
    "Entry",
    "REMOVE",
    "all_but_newest",
    "block_text",
    "blocks",
    "is_protected",
    "replace_blocks",
    "replaced_content",
    "tool_result_blocks",
    "tool_use_blocks",
]

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


def replaced_content(block: Mapping[str, Any], text: str) -> Any:
    """What a result's content becomes when its text is replaced by ``text`` (a pointer, an "expired" note).

    A string result, or a list of text parts only, becomes ``text``. A list result keeps every part that is not text — a ``tool_reference``
    (ToolSearch), a ``search_result``, anything a newer harness adds — after one text part holding ``text``:
    only the text was moved or expired, so nothing else may vanish with it.
    """
    content = block.get("content")
    if type(content) is not list:
        return text
    others = [p for p in content if not _is_text_part(p)]
    return [{"type": "text", "text": text}, *others] if others else text


def _is_text_part(part: Any) -> bool:
    return type(part) is dict and part.get("type") == "text" and type(part.get("text")) is str


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
