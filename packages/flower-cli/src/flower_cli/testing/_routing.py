"""Routing replies to the agent that asks: several agents talk to one server at once.

A main thread and its background workers, or a clarifier, a judge and a coordinator in one run, send
interleaved requests. Key each agent's steps with a `Match` (a predicate on the request that composes with
``&``, ``|`` and ``~``):

- `when_system(fragment)`: the agent's system prompt holds ``fragment`` (a role's rules: route by role);
- `when_prompt(fragment)`: its first user message does (a task's prompt, a worker's brief);
- `when_subagent()` / `when_main()`: a worker's request, or a main thread's;
- `when_notified(fragment)`: the main thread woken by a worker's ``<task-notification>`` (holding
  ``fragment``, e.g. the worker's final text) — the first request of a post-notification turn.

`keyed(match, *replies)` keys a whole run of replies at once. `dispatch(description, *script)` is an Agent
tool call whose worker plays ``script`` (queued with the call, keyed on a token in the worker's prompt), so
one test scripts a coordinator and all its workers.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from ._recorded import RecordedRequest
from ._replies import Reply, ScriptStep, ToolCall, next_tool_id

__all__ = [
    "Match",
    "dispatch",
    "keyed",
    "when",
    "when_main",
    "when_notified",
    "when_prompt",
    "when_subagent",
    "when_system",
]

RequestTest = Callable[[RecordedRequest], bool]

_tokens = itertools.count(1)


class Match:
    """A predicate on a request that composes: ``when_system("coordinator") & ~when_subagent()``."""

    def __init__(self, test: RequestTest, label: str) -> None:
        self._test = test
        self.label = label

    def __call__(self, request: RecordedRequest) -> bool:
        return bool(self._test(request))

    def __and__(self, other: RequestTest) -> Match:
        return Match(_both(self, other), f"({self.label} & {_label(other)})")

    def __or__(self, other: RequestTest) -> Match:
        return Match(lambda r: self(r) or other(r), f"({self.label} | {_label(other)})")

    def __invert__(self) -> Match:
        return Match(lambda r: not self(r), f"~{self.label}")

    def __repr__(self) -> str:
        return f"Match{self.label}" if self.label.startswith("(") else f"Match({self.label})"


def _both(first: RequestTest, second: RequestTest) -> RequestTest:
    return lambda request: first(request) and second(request)


def _label(test: RequestTest) -> str:
    return test.label if isinstance(test, Match) else getattr(test, "__name__", "custom")


def when(test: RequestTest, label: str = "custom") -> Match:
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


def keyed(match: RequestTest, *replies: Reply | ScriptStep | Callable[[RecordedRequest], Reply]) -> list[ScriptStep]:
    """Key every reply on ``match`` (a `ScriptStep` keeps its own condition too: both must hold)."""
    steps: list[ScriptStep] = []
    for reply in replies:
        if isinstance(reply, ScriptStep):
            own = reply.when
            steps.append(ScriptStep(reply.reply, match if own is None else _both(match, own)))
        else:
            steps.append(ScriptStep(reply, match))
    return steps


def dispatch(
    description: str,
    *script: Reply | ScriptStep | Callable[[RecordedRequest], Reply],
    prompt: str = "",
    subagent_type: str | None = None,
    background: bool | None = None,
    id: str | None = None,  # noqa: A002 - the Messages API's field name
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
    return ToolCall("Agent", tool_input, id or next_tool_id(), script=keyed(when_prompt(token), *script))
