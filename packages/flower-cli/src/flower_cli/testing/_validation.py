"""The request checks the real Messages API makes that a rewritten transcript can break.

Each returns the API's own error wording (an ``invalid_request_error`` message) or ``None``. The wording is
the one the real API answers with, so tests exercise the same text the resilience classifier will see.
"""

from __future__ import annotations

from typing import Any

__all__ = ["validate_messages"]


def _content(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content or [] if isinstance(b, dict)]


def _conversation(messages: list[dict[str, Any]]) -> list[tuple[int, dict[str, Any]]]:
    # Claude Code places `role: "system"` reminders between turns; they are not part of the
    # user/assistant alternation the pairing rule is about.
    return [(i, m) for i, m in enumerate(messages) if m.get("role") in ("user", "assistant")]


def _empty_text(messages: list[dict[str, Any]]) -> str | None:
    for message in messages:
        for block in _content(message):
            if block.get("type") != "text":
                continue
            text = block.get("text")
            if text == "" or text is None:
                return "messages: text content blocks must be non-empty"
            if isinstance(text, str) and not text.strip():
                return "messages: text content blocks must contain non-whitespace text"
    return None


def _unanswered_tool_use(messages: list[dict[str, Any]]) -> str | None:
    conversation = _conversation(messages)
    for pos, (index, message) in enumerate(conversation):
        if message.get("role") != "assistant":
            continue
        ids = [b.get("id") for b in _content(message) if b.get("type") == "tool_use"]
        if not ids:
            continue
        following = conversation[pos + 1][1] if pos + 1 < len(conversation) else None
        answered = set()
        if following is not None and following.get("role") == "user":
            answered = {b.get("tool_use_id") for b in _content(following) if b.get("type") == "tool_result"}
        missing = [i for i in ids if i not in answered]
        if missing:
            at = conversation[pos + 1][0] if following is not None else index + 1
            return (
                f"messages.{at}: `tool_use` ids were found without `tool_result` blocks immediately after: "
                f"{', '.join(str(m) for m in missing)}. Each `tool_use` block must have a corresponding "
                "`tool_result` block in the next message."
            )
    return None


def _unexpected_tool_result(messages: list[dict[str, Any]]) -> str | None:
    conversation = _conversation(messages)
    for pos, (index, message) in enumerate(conversation):
        if message.get("role") != "user":
            continue
        previous = conversation[pos - 1][1] if pos > 0 else None
        offered = set()
        if previous is not None and previous.get("role") == "assistant":
            offered = {b.get("id") for b in _content(previous) if b.get("type") == "tool_use"}
        for j, block in enumerate(_content(message)):
            if block.get("type") == "tool_result" and block.get("tool_use_id") not in offered:
                return (
                    f"messages.{index}.content.{j}: unexpected `tool_use_id` found in `tool_result` blocks: "
                    f"{block.get('tool_use_id')}. Each `tool_result` block must have a corresponding `tool_use` "
                    "block in the previous message."
                )
    return None


def validate_messages(messages: list[dict[str, Any]]) -> str | None:
    """The first rule the request breaks, in the API's words, or ``None`` when it is well-formed."""
    for rule in (_empty_text, _unanswered_tool_use, _unexpected_tool_result):
        problem = rule(messages)
        if problem:
            return problem
    return None
