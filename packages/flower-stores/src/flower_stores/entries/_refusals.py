"""Recognising a call that did not run: denied, rejected or interrupted — in every harness version.

Claude Code has recorded these three ways over its versions, and a transcript may mix them (a session resumed
under a newer harness keeps its older lines):

- Later 2.1 versions (after 2.1.39) mark the entry: ``toolDenialKind`` (``permission-rule``, ``user-rejected``,
  …) about its first ``tool_result``, with a ``permissionDecision`` whenever a permission check refused the
  call. ``user-rejected`` *without* a decision is a call stopped while it ran.
- Before that (1.0.x, 2.0.x, 2.1.0–2.1.39) there is no marker: the harness wrote one of its fixed sentences as the
  result, flagged ``is_error``, and a *string* ``toolUseResult`` ("Error: …", "User rejected tool use").
  Later harnesses still write this unmarked form for some lines: subagent permission denials of 2.1.47–2.1.81
  seen in public transcripts carry no ``toolDenialKind``. So the unmarked rules apply to every version.
- The oldest interrupt form is ``[Request interrupted by user…]`` inside an error result.

Text alone would misfire on a tool output that happens to contain the sentence (a grep of a log), so an
unmarked result counts only when it *is* the harness's sentence: it starts with it, it is an error result,
and its ``toolUseResult`` is not the structured output a tool writes for itself (a dict: ``stdout``, ``file``…).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["INTERRUPT", "USER_FEEDBACK", "refusal", "result_text"]

# What `refusal` returns besides a denial kind.
INTERRUPT = "interrupt"  # stopped while it ran, or rejected with "STOP … wait for the user": neutralised
USER_FEEDBACK = "user-feedback"  # rejected with the user's own instructions: kept as the user wrote them

_REJECTED = (
    "The user doesn't want to proceed with this tool use",
    "The user doesn't want to take this action right now",
)
_STOP = "STOP what you are doing"
_INTERRUPTED = "[Request interrupted by user"
# Unmarked denials, with the kind the marked harness gives the same situation.
_DENIED = (
    ("Permission to use ", " has been denied", "permission-rule"),  # a deny rule / can_use_tool refusal
    ("Permission for this action has been denied", "", "permission-rule"),
    (
        "Claude requested permissions to ",
        "but you haven't granted it yet",
        "user-rejected",
    ),  # headless, not pre-approved
)


def result_text(block: Mapping[str, Any]) -> str | None:
    """The text of a tool_result's content (a string, or its text parts joined), or None if it has none."""
    content = block.get("content")
    if type(content) is str:
        return content
    if type(content) is not list:
        return None
    texts = [p["text"] for p in content if type(p) is dict and p.get("type") == "text" and type(p.get("text")) is str]
    return "".join(texts) if texts else None


def _first_result(entry: Mapping[str, Any]) -> Any:
    message = entry.get("message")
    content = message.get("content") if type(message) is dict else None
    if type(content) is list:
        for part in content:
            if type(part) is dict and part.get("type") == "tool_result":
                return part
    return None


def refusal(entry: Mapping[str, Any], block: Mapping[str, Any]) -> str | None:
    """Why the call a tool_result answers did not run as asked, or None for a real tool result.

    Returns `INTERRUPT`, `USER_FEEDBACK`, or a denial kind (``permission-rule``, ``user-rejected``, or whatever
    ``toolDenialKind`` a newer harness writes). Any non-None answer means the result is the harness's words,
    not the tool's output: it is never a glance to expire nor a large output to spill.
    """
    kind = entry.get("toolDenialKind")
    if kind is not None and block is _first_result(entry):  # the marker speaks of the entry's (first) result
        if kind == "user-rejected" and "permissionDecision" not in entry:
            return INTERRUPT
        return kind if isinstance(kind, str) else "unknown"
    if not block.get("is_error"):
        return None
    text = result_text(block)
    if text is None:
        return None
    if _INTERRUPTED in text:  # only the harness writes this marker, so it settles the case by itself
        return INTERRUPT
    if type(entry.get("toolUseResult")) is dict:
        return None  # a tool's own structured output: whatever it says, it is not the harness talking
    text = text.lstrip()
    if text.startswith(_REJECTED):
        return INTERRUPT if _STOP in text else USER_FEEDBACK
    for start, contains, denial_kind in _DENIED:
        if text.startswith(start) and contains in text:
            return denial_kind
    return None
