"""What the scripted model answers: one reply object per Messages API request.

A script is a list of these. Plain replies (`Text`, `ToolUse`, `Turn`) become a streamed SSE message (or a
JSON message when the request is not streaming); the others model the failures a long run meets: HTTP
error statuses, a stream cut in the middle, a server that accepts and never answers, and an outage.

Several agents at once — a main thread and its background workers, or a clarifier, a judge and a
coordinator in one run — send interleaved requests. Key each agent's steps with a `Match` (a predicate on
the request that composes with ``&``, ``|`` and ``~``):

- `when_system(fragment)`: the agent's system prompt holds ``fragment`` (a role's rules: route by role);
- `when_prompt(fragment)`: its first user message does (a task's prompt, a worker's brief);
- `when_subagent()` / `when_main()`: a worker's request, or a main thread's;
- `when_notified(fragment)`: the main thread woken by a worker's ``<task-notification>`` (holding
  ``fragment``, e.g. the worker's final text) — the first request of a post-notification turn.

`keyed(match, *replies)` keys a whole run of replies at once. `dispatch(description, *script)` is an Agent
tool call whose worker plays ``script`` (queued with the call, keyed on a token in the worker's prompt), so
one test scripts a coordinator and all its workers. `After(condition, reply)` holds a reply until a
condition on the server holds (e.g. `seen(when_prompt("B"))`: worker B has started), which makes parallel
work deterministic without sleeps.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .recorded import RecordedRequest
    from .server import ScriptedServer

__all__ = [
    "After",
    "ApiError",
    "Block",
    "Drop",
    "Hang",
    "Match",
    "Outage",
    "Reply",
    "Step",
    "Text",
    "ToolCall",
    "ToolUse",
    "Turn",
    "Usage",
    "attached_steps",
    "bash",
    "dispatch",
    "invalid_request",
    "keyed",
    "overloaded",
    "rate_limited",
    "read",
    "seen",
    "server_error",
    "unauthorized",
    "when",
    "when_main",
    "when_notified",
    "when_prompt",
    "when_subagent",
    "when_system",
    "write",
]

_ids = itertools.count(1)
_tokens = itertools.count(1)


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
    # The worker's own replies when this is an Agent call made by `dispatch` (queued along with the call).
    script: list[Step] = field(default_factory=list, repr=False, compare=False)


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


def Text(text: str, *, usage: Usage | None = None, delay: float = 0.0) -> Turn:
    """A plain text answer that ends the turn."""
    return Turn([text], usage=usage or Usage(), delay=delay)


def ToolUse(
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


def rate_limited(
    retry_after: float = 1, message: str = "Number of request tokens has exceeded your rate limit."
) -> ApiError:
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


class Match:
    """A predicate on a request that composes: ``when_system("coordinator") & ~when_subagent()``."""

    def __init__(self, test: Callable[[RecordedRequest], bool], label: str) -> None:
        self._test = test
        self.label = label

    def __call__(self, request: RecordedRequest) -> bool:
        return bool(self._test(request))

    def __and__(self, other: Callable[[RecordedRequest], bool]) -> Match:
        return Match(lambda r: self(r) and other(r), f"({self.label} & {_label(other)})")

    def __or__(self, other: Callable[[RecordedRequest], bool]) -> Match:
        return Match(lambda r: self(r) or other(r), f"({self.label} | {_label(other)})")

    def __invert__(self) -> Match:
        return Match(lambda r: not self(r), f"~{self.label}")

    def __repr__(self) -> str:
        return f"Match{self.label}" if self.label.startswith("(") else f"Match({self.label})"


def _label(test: Callable[[RecordedRequest], bool]) -> str:
    return test.label if isinstance(test, Match) else getattr(test, "__name__", "custom")


def when(test: Callable[[RecordedRequest], bool], label: str = "custom") -> Match:
    """Any predicate, made composable."""
    return Match(test, label)


def when_prompt(fragment: str) -> Match:
    """Requests of the agent whose prompt (first user message) contains ``fragment``.

    Tells a worker from the main thread by its brief, and one task from another.
    """
    return Match(lambda request: fragment in request.first_user_text, f"prompt~{fragment!r}")


def when_system(fragment: str) -> Match:
    """Requests of the agent whose system prompt contains ``fragment``: route by role (its appended rules).

    A named worker's own prompt is its system prompt too, so this also picks a worker type.
    """
    return Match(lambda request: fragment in request.system_text, f"system~{fragment!r}")


def when_subagent() -> Match:
    """A subagent's request (an Agent-tool worker), whatever its role."""
    return Match(lambda request: request.is_subagent, "subagent")


def when_main() -> Match:
    """A main thread's request (not a subagent's)."""
    return Match(lambda request: not request.is_subagent, "main")


def when_notified(fragment: str = "") -> Match:
    """The main thread woken by a worker's ``<task-notification>`` that contains ``fragment``.

    Only the first request of the post-notification turn matches (its newest user message is the
    notification); the turn's later requests carry tool results, so key those by order or by content.
    """
    return Match(
        lambda request: not request.is_subagent and any(fragment in n for n in request.notifications),
        f"notified~{fragment!r}",
    )


def seen(match: Callable[[RecordedRequest], bool], count: int = 1) -> Callable[[ScriptedServer], bool]:
    """A server condition for `After`: at least ``count`` requests matching ``match`` have arrived."""

    def condition(server: ScriptedServer) -> bool:
        return sum(1 for r in server.message_requests if match(r)) >= count

    return condition


def keyed(
    match: Callable[[RecordedRequest], bool], *replies: Reply | Step | Callable[[RecordedRequest], Reply]
) -> list[Step]:
    """Key every reply on ``match`` (a `Step` keeps its own condition too: both must hold)."""
    steps: list[Step] = []
    for reply in replies:
        if isinstance(reply, Step):
            own = reply.when
            steps.append(Step(reply.reply, match if own is None else (lambda r, a=match, b=own: a(r) and b(r))))
        else:
            steps.append(Step(reply, match))
    return steps


def dispatch(
    description: str,
    *script: Reply | Step | Callable[[RecordedRequest], Reply],
    prompt: str = "",
    subagent_type: str | None = None,
    background: bool | None = None,
    id: str | None = None,
    **extra_input: Any,
) -> ToolCall:
    """An Agent tool call whose worker plays ``script``: put it in a `Turn` of the dispatching agent.

    The worker's prompt carries a unique token, and ``script`` is keyed on it and queued when the turn is
    queued, so the worker's requests (which interleave with everyone else's) get exactly these replies.
    ``background=None`` leaves ``run_in_background`` to the harness (background by default).
    """
    token = f"[scripted worker {next(_tokens)}]"
    tool_input: dict[str, Any] = {"description": description, "prompt": f"{prompt or description}\n\n{token}"}
    if subagent_type is not None:
        tool_input["subagent_type"] = subagent_type
    if background is not None:
        tool_input["run_in_background"] = background
    tool_input.update(extra_input)
    return ToolCall("Agent", tool_input, id or _next_tool_id(), script=keyed(when_prompt(token), *script))


@dataclass
class After(Reply):
    """Answer with ``reply`` once ``condition(server)`` holds; fail the test's wait after ``timeout`` seconds.

    For ordering parallel agents without sleeping: a worker's last reply ``After(seen(when_prompt(B)))``
    proves worker B was running at the same time.
    """

    condition: Callable[[ScriptedServer], bool]
    reply: Reply
    timeout: float = 120.0


def attached_steps(reply: Any) -> list[Step]:
    """The worker scripts a reply carries (its `dispatch` calls, nested dispatches included), to queue with it."""
    if isinstance(reply, After):
        return attached_steps(reply.reply)
    if not isinstance(reply, Turn):
        return []
    out: list[Step] = []
    for call in reply.tool_calls:
        for step in call.script:
            out.append(step)
            out.extend(attached_steps(step.reply))
    return out
