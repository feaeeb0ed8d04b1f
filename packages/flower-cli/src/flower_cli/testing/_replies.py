"""What the scripted model answers: one reply object per Messages API request.

A script is a list of these. Plain replies (`Text`, `ToolUse`, `Turn`) become a streamed SSE message (or a
JSON message when the request is not streaming); the others model the failures a long run meets: HTTP
error statuses, a stream cut in the middle, a server that accepts and never answers, and an outage.
A `ScriptStep` keys a reply to the requests it may answer (see `_routing` for the keys).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._recorded import RecordedRequest

__all__ = [
    "ApiError",
    "Block",
    "Drop",
    "Hang",
    "Outage",
    "Reply",
    "ScriptStep",
    "Text",
    "ToolCall",
    "ToolUse",
    "Turn",
    "UsageLimited",
    "Usage",
    "bash",
    "invalid_request",
    "next_tool_id",
    "overloaded",
    "rate_limited",
    "read",
    "server_error",
    "spend_capped",
    "unauthorized",
    "usage_limited",
    "write",
]

_ids = itertools.count(1)


def next_tool_id() -> str:
    """A fresh ``tool_use`` id: unique across every server of the process, so a resumed session never sees one twice."""
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
    id: str = field(default_factory=next_tool_id)
    # The worker's own replies when this is an Agent call made by `dispatch` (queued along with the call).
    script: list[ScriptStep] = field(default_factory=list, repr=False, compare=False)


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


def Text(text: str, *, usage: Usage | None = None, delay: float = 0.0) -> Turn:  # noqa: N802 - reads as the reply it builds
    """A plain text answer that ends the turn."""
    return Turn([text], usage=usage or Usage(), delay=delay)


def ToolUse(  # noqa: N802 - reads as the reply it builds
    name: str,
    input: dict[str, Any],  # noqa: A002 - the Messages API's field name
    *,
    text: str | None = None,
    id: str | None = None,  # noqa: A002 - the Messages API's field name
    usage: Usage | None = None,
    delay: float = 0.0,
) -> Turn:
    """One tool call, optionally preceded by a sentence of text."""
    call = ToolCall(name, input, id or next_tool_id())
    blocks: list[Block] = [text, call] if text else [call]
    return Turn(blocks, usage=usage or Usage(), delay=delay)


def bash(command: str, **options: Any) -> Turn:
    """A ``Bash`` tool call running ``command``; ``options`` are `ToolUse`'s (``text``, ``id``, ``usage``, ``delay``)."""
    return ToolUse("Bash", {"command": command, "description": command[:60]}, **options)


def read(file_path: str, **options: Any) -> Turn:
    """A ``Read`` tool call of ``file_path``; ``options`` as for `bash`."""
    return ToolUse("Read", {"file_path": file_path}, **options)


def write(file_path: str, content: str, **options: Any) -> Turn:
    """A ``Write`` tool call putting ``content`` in ``file_path``; ``options`` as for `bash`."""
    return ToolUse("Write", {"file_path": file_path, "content": content}, **options)


@dataclass
class ApiError(Reply):
    """An HTTP error status with the Messages API's error body."""

    status: int
    error_type: str
    message: str
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


def unauthorized(message: str = "invalid x-api-key") -> ApiError:
    """401: the credential is refused."""
    return ApiError(401, "authentication_error", message)


def rate_limited(
    retry_after: float = 1, message: str = "Number of request tokens has exceeded your rate limit."
) -> ApiError:
    """429 with a ``retry-after`` header."""
    return ApiError(429, "rate_limit_error", message, {"retry-after": f"{retry_after:g}"})


def overloaded(message: str = "Overloaded") -> ApiError:
    """529: the API is overloaded."""
    return ApiError(529, "overloaded_error", message)


def server_error(message: str = "Internal server error") -> ApiError:
    """500."""
    return ApiError(500, "api_error", message)


def invalid_request(message: str) -> ApiError:
    """400 with the API's own wording (e.g. "prompt is too long")."""
    return ApiError(400, "invalid_request_error", message)


SPEND_CAP_TEXT = (
    "You have reached your specified workspace API usage limits. You will regain access on 2027-01-01 at 00:00 UTC."
)


def spend_capped(message: str = SPEND_CAP_TEXT) -> ApiError:
    """429 for a spend cap: the API's words, and the unified headers of a refusal that no reset lifts."""
    return ApiError(
        429,
        "rate_limit_error",
        message,
        {
            "anthropic-ratelimit-unified-status": "rejected",
            "anthropic-ratelimit-unified-overage-disabled-reason": "out_of_credits",
        },
    )


@dataclass
class UsageLimited(Reply):
    """Open a usage-limit window of ``seconds`` at the request that takes this step: that request and every
    model request until the window ends (only the requests the step's key accepts, when it is keyed) are refused (429, ``anthropic-ratelimit-unified-status: rejected``, the
    reset in ``-reset`` and in the claimed window's header), consuming no step; then the script goes on.
    ``claim`` is the ``representative-claim`` sent (``five_hour``, ``seven_day``…)."""

    seconds: float
    claim: str = "five_hour"


def usage_limited(seconds: float, claim: str = "five_hour") -> UsageLimited:
    """A usage limit that lifts ``seconds`` after the first refused request (see `UsageLimited`)."""
    return UsageLimited(seconds, claim)


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
class ScriptStep:
    """A reply that only answers requests ``when`` accepts; other requests pass it by.

    ``reply`` may also be a function of the request, called when the step is taken.
    """

    reply: Reply | Callable[[RecordedRequest], Reply]
    when: Callable[[RecordedRequest], bool] | None = None

    def accepts(self, request: RecordedRequest) -> bool:
        return self.when is None or self.when(request)
