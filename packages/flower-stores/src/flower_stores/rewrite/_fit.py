"""Fitting: a rewritten transcript brought under a size budget, so a resumed request can succeed.

The count rule of `trim` keeps the newest ``keep_recent`` large results whatever their size; a session whose
newest results are huge still overflows the window on resume. `fit` measures what the model would be sent
(`history_chars`) and, while it is over the budget, moves bulk out, oldest first:

1. tool outputs (each to its spill file, one Read away — `trim`'s spill files and pointers);
2. then the bulky string values of tool inputs (a ``Write``'s content, an ``Edit``'s old and new text), each to
   its spill file as well.

What it never touches: any prompt or text the model or the person wrote (so the first prompt, and the brief
and goal it carries, always stay), thinking, images and documents, compact summaries and meta entries, and the
harness's own words for a call that did not run. It only replaces the content of a block, never removes one,
so no ``tool_use`` loses its ``tool_result``. A value is moved only when its pointer is at most half its size,
which makes fitting idempotent: a pointer is never moved again.
"""

from __future__ import annotations

from collections.abc import Sequence
from os import PathLike
from pathlib import Path
from typing import Any

from ..entries import Entry, block_text, refusal, replaced_content
from ..report import LoadReport, Rewritten
from ._policies import TrimPolicy
from ._trim import Spiller

__all__ = ["fit", "history_chars"]

INPUT_TEXT = "[Earlier tool input trimmed: {chars:,} characters saved to {path}; Read that file if you need it again.]"


def _value_chars(value: Any) -> int:
    """The characters of a tool input as the model reads it: its strings, keys and scalars (no JSON syntax)."""
    kind = type(value)
    if kind is str:
        return len(value)
    if kind is dict:
        return sum(len(k) + _value_chars(v) for k, v in value.items())
    if kind is list:
        return sum(_value_chars(v) for v in value)
    return 0 if value is None else len(str(value))


def _block_chars(block: Any) -> int:
    if type(block) is not dict:
        return 0
    kind = block.get("type")
    if kind == "text":
        text = block.get("text")
        return len(text) if type(text) is str else 0
    if kind == "thinking":
        text = block.get("thinking")
        return len(text) if type(text) is str else 0
    if kind == "tool_use":
        return len(str(block.get("name", ""))) + _value_chars(block.get("input"))
    if kind == "tool_result":
        content = block.get("content")
        if type(content) is str:
            return len(content)
        if type(content) is list:
            return sum(_block_chars(part) for part in content)
    return 0


def _entry_chars(entry: Any) -> int:
    """What one entry adds to a request: the content of a user or assistant message (0 for anything else)."""
    if type(entry) is not dict or entry.get("type") not in ("user", "assistant"):
        return 0
    message = entry.get("message")
    content = message.get("content") if type(message) is dict else None
    if type(content) is str:
        return len(content)
    if type(content) is list:
        return sum(_block_chars(block) for block in content)
    return 0


def history_chars(entries: Sequence[Entry]) -> int:
    """The characters a resumed session sends of ``entries``: the text of its messages — prompts, answers,
    thinking, tool inputs and tool outputs — without the JSON around them (the API's own tokens)."""
    return sum(_entry_chars(entry) for entry in entries)


def _sites(entries: Sequence[Any]) -> list[tuple[int, int, str | None, str]]:
    """What fitting may move, oldest first: tool outputs, then tool inputs' string values.

    Each site is (entry index, block index, input key or None for an output, text).
    """
    outputs: list[tuple[int, int, str | None, str]] = []
    inputs: list[tuple[int, int, str | None, str]] = []
    for i, entry in enumerate(entries):
        if type(entry) is not dict or entry.get("isCompactSummary") or entry.get("isMeta"):
            continue
        message = entry.get("message")
        content = message.get("content") if type(message) is dict else None
        if type(content) is not list:
            continue
        etype = entry.get("type")
        for j, block in enumerate(content):
            if type(block) is not dict:
                continue
            kind = block.get("type")
            if etype == "user" and kind == "tool_result" and refusal(entry, block) is None:
                text = block_text(block)
                if text is not None:
                    outputs.append((i, j, None, text))
            elif etype == "assistant" and kind == "tool_use" and type(block.get("input")) is dict:
                inputs.extend((i, j, key, value) for key, value in block["input"].items() if type(value) is str)
    return outputs + inputs


def fit(
    entries: Sequence[Entry],
    budget: int,
    policy: TrimPolicy | None = None,
    workspace: str | PathLike[str] = ".",
    *,
    write_spill: bool = True,
) -> Rewritten:
    """``entries`` with the oldest tool outputs, then tool inputs, moved to spill files until the transcript's
    `history_chars` is at most ``budget`` (see the module docstring for what is never moved).

    When even moving all of them cannot fit, everything movable is moved and the report says by how much it is
    over (``LoadReport.over_budget``): the caller must not send it. Spill files go where ``policy``'s do
    (default `TrimPolicy`), whether or not its count rule is enabled; ``write_spill=False`` only computes. A
    value whose file cannot be written stays. The input is not modified; changed entries are copies.
    """
    policy = policy or TrimPolicy()
    size = history_chars(entries)
    if size <= budget:
        return Rewritten(list(entries), LoadReport(sent_chars=size, budget=budget))  # type: ignore[arg-type]
    spiller = Spiller(policy, Path(workspace).expanduser().resolve())
    changes: dict[int, dict[int, dict[str, Any]]] = {}  # entry -> block -> what replaces (key or "content")
    moved = saved = 0
    for i, j, key, text in _sites(entries):
        if size <= budget:
            break
        template = policy.text if key is None else INPUT_TEXT
        pointer = spiller.pointer(text, write=False, template=template)
        if pointer is None or 2 * len(pointer) > len(text):
            continue  # not worth a Read (and a pointer is never moved again: fitting twice changes nothing)
        if write_spill and spiller.pointer(text, template=template) is None:
            continue  # its file cannot be written: a pointer to nothing would lose the text
        changes.setdefault(i, {}).setdefault(j, {})["content" if key is None else key] = pointer
        moved += 1
        size -= len(text) - len(pointer)
        saved += len(text) - len(pointer)
    out: list[Any] = list(entries)
    for i, by_block in changes.items():
        entry = out[i]
        content = list(entry["message"]["content"])
        for j, replaced in by_block.items():
            block = content[j]
            if "content" in replaced and block.get("type") == "tool_result":
                content[j] = {**block, "content": replaced_content(block, replaced["content"])}
            else:
                content[j] = {**block, "input": {**block["input"], **replaced}}
        out[i] = {**entry, "message": {**entry["message"], "content": content}}
    return Rewritten(out, LoadReport(fitted=moved, chars_saved=saved, sent_chars=size, budget=budget))
