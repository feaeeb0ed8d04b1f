"""What the scripted model answers: one reply object per Messages API request.

A script is a list of these. Plain replies (`Text`, `ToolUse`, `Turn`) become a streamed SSE message (or a
JSON message when the request is not streaming); the others model the failures a long run meets: HTTP
error statuses, a stream cut in the middle, a server that accepts and never answers, and an outage.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .recorded import RecordedRequest

__all__ = [
    "ApiError",
    "Block",
    "Drop",
    "Hang",
    "Outage",
    "Reply",
    "Step",
    "Text",
    "ToolCall",
    "ToolUse",
    "Turn",
    "Usage",
    "bash",
    "invalid_request",
    "overloaded",
    "rate_limited",
    "read",
    "server_error",
    "unauthorized",
    "when_prompt",
    "write",
]

_ids = itertools.count(1)


def _next_tool_id() -> str:
    # Unique across every server in the test process, so a resumed session never sees a repeated id.
    return f"toolu_scripted{next(_ids):06d}"


@dataclass
class Usage:
    """Token usage reported for a reply. ``None`` input/output counts are estimated from the bytes."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0


@dataclass
class ToolCall:
    """One ``tool_use`` block inside a `Turn`."""

    name: str
    input: dict[str, Any]
    id: str = field(default_factory=_next_tool_id)


Block = str | ToolCall


class Reply:
    """Base class of everything a script step can answer."""

    delay: float = 0.0


@dataclass
class Turn(Reply):
    """An assistant message made of text blocks (``str``) and tool calls (`ToolCall`)."""

    blocks: list[Block]
    usage: Usage = field(default_factory=Usage)
    stop_reason: str | None = None  # default: "tool_use" when there is a tool call, else "end_turn"
    delay: float = 0.0

    @property
    def tool_calls(self) -> list[ToolCall]:
        return [b for b in self.blocks if isinstance(b, ToolCall)]

    def final_stop_reason(self) -> str:
        if self.stop_reason:
            return self.stop_reason
        return "tool_use" if self.tool_calls else "end_turn"


def Text(text: str, *, usage: Usage | None = None, delay: float = 0.0) -> Turn:  # noqa: N802 - reads as a reply
    """A plain text answer that ends the turn."""
    return Turn([text], usage=usage or Usage(), delay=delay)


def ToolUse(  # noqa: N802 - reads as a reply
    name: str,
    input: dict[str, Any],
    *,
    text: str | None = None,
    id: str | None = None,
    usage: Usage | None = None,
    delay: float = 0.0,
) -> Turn:
    """One tool call, optionally preceded by a sentence of text."""
    call = ToolCall(name, input, id or _next_tool_id())
    blocks: list[Block] = [text, call] if text else [call]
    return Turn(blocks, usage=usage or Usage(), delay=delay)


def bash(command: str, **kw: Any) -> Turn:
    return ToolUse("Bash", {"command": command, "description": command[:60]}, **kw)


def read(file_path: str, **kw: Any) -> Turn:
    return ToolUse("Read", {"file_path": file_path}, **kw)


def write(file_path: str, content: str, **kw: Any) -> Turn:
    return ToolUse("Write", {"file_path": file_path, "content": content}, **kw)


@dataclass
class ApiError(Reply):
    """An HTTP error status with the Messages API's error body."""

    status: int
    error_type: str
    message: str
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


def unauthorized(message: str = "invalid x-api-key") -> ApiError:
    return ApiError(401, "authentication_error", message)


def rate_limited(retry_after: float = 1, message: str = "Number of request tokens has exceeded your rate limit.") -> ApiError:
    return ApiError(429, "rate_limit_error", message, {"retry-after": f"{retry_after:g}"})


def overloaded(message: str = "Overloaded") -> ApiError:
    return ApiError(529, "overloaded_error", message)


def server_error(message: str = "Internal server error") -> ApiError:
    return ApiError(500, "api_error", message)


def invalid_request(message: str) -> ApiError:
    return ApiError(400, "invalid_request_error", message)


@dataclass
class Drop(Reply):
    """Start streaming ``partial`` text, then cut the connection without finishing the message."""

    partial: str = "Let me look at th"
    delay: float = 0.0


@dataclass
class Hang(Reply):
    """Accept the request and never answer (until the server stops, or ``seconds`` pass, then close)."""

    seconds: float | None = None


@dataclass
class Outage(Reply):
    """Close this request's connection unanswered and stop listening; listen again after ``seconds``.

    ``seconds=None`` stays down until the test calls ``server.start()``.
    """

    seconds: float | None = 3.0


@dataclass
class Step:
    """A reply that only answers requests ``when`` accepts; other requests pass it by."""

    reply: Reply | Callable[[RecordedRequest], Reply]
    when: Callable[[RecordedRequest], bool] | None = None

    def accepts(self, request: RecordedRequest) -> bool:
        return self.when is None or self.when(request)


def when_prompt(fragment: str) -> Callable[[RecordedRequest], bool]:
    """Accept requests of the agent whose prompt contains ``fragment`` (tells a subagent from the main thread).

    Claude Code runs Agent-tool subagents in the background, so their requests interleave with the main
    thread's; a script keys each agent's steps on its prompt.
    """
    return lambda request: fragment in request.first_user_text
