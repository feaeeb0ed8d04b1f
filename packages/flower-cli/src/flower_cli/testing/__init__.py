"""Test agents and workflows offline: a scripted Messages API server for the real Claude Code binary.

`ScriptedServer` listens on 127.0.0.1 and answers ``POST /v1/messages`` from a queue of scripted replies —
text, tool calls, API errors, dropped streams, hangs, outages — streamed the way the real API streams them.
The real SDK and the real bundled binary talk to it (`offline_environment` is the environment that points them
there); every request is recorded (`RecordedRequest`), so a test asserts on what the model was sent. Several
agents at once (a coordinator and its workers, a clarifier and a judge) are told apart by who is asking: a
`Match` on the system prompt (a role's rules) or the first message (a task's prompt), composed with ``&``,
``|`` and ``~``.

With pytest, installing flower-cli brings the ``scripted_claude`` fixture (a plugin, loaded by pytest only):
a started server with the environment set for the test. The package's README shows a workflow tested with it.

Only the standard library is used. Names are imported on first use (see `flower_cli._shared.lazy`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._shared.lazy import lazy_exports

__all__ = [
    "DUMMY_API_KEY",
    "EXHAUSTED_TEXT",
    "After",
    "ApiError",
    "Block",
    "Drop",
    "Hang",
    "Match",
    "Outage",
    "RecordedRequest",
    "Reply",
    "ScriptItem",
    "ScriptStep",
    "ScriptedServer",
    "Text",
    "ToolCall",
    "ToolUse",
    "Turn",
    "Usage",
    "bash",
    "dispatch",
    "invalid_request",
    "keyed",
    "offline_environment",
    "overloaded",
    "rate_limited",
    "read",
    "result_text",
    "seen",
    "server_error",
    "unauthorized",
    "validate_messages",
    "when",
    "when_main",
    "when_notified",
    "when_prompt",
    "when_subagent",
    "when_system",
    "write",
]

_HOMES = {
    "DUMMY_API_KEY": "_environment",
    "EXHAUSTED_TEXT": "_server",
    "After": "_server",
    "ApiError": "_replies",
    "Block": "_replies",
    "Drop": "_replies",
    "Hang": "_replies",
    "Match": "_routing",
    "Outage": "_replies",
    "RecordedRequest": "_recorded",
    "Reply": "_replies",
    "ScriptItem": "_server",
    "ScriptStep": "_replies",
    "ScriptedServer": "_server",
    "Text": "_replies",
    "ToolCall": "_replies",
    "ToolUse": "_replies",
    "Turn": "_replies",
    "Usage": "_replies",
    "bash": "_replies",
    "dispatch": "_routing",
    "invalid_request": "_replies",
    "keyed": "_routing",
    "offline_environment": "_environment",
    "overloaded": "_replies",
    "rate_limited": "_replies",
    "read": "_replies",
    "result_text": "_recorded",
    "seen": "_server",
    "server_error": "_replies",
    "unauthorized": "_replies",
    "validate_messages": "_validation",
    "when": "_routing",
    "when_main": "_routing",
    "when_notified": "_routing",
    "when_prompt": "_routing",
    "when_subagent": "_routing",
    "when_system": "_routing",
    "write": "_replies",
}

_load, _names = lazy_exports(__name__, _HOMES)


def __getattr__(name: str) -> Any:
    return _load(name)


def __dir__() -> list[str]:
    return _names()


if TYPE_CHECKING:
    from ._environment import DUMMY_API_KEY, offline_environment
    from ._recorded import RecordedRequest, result_text
    from ._replies import (
        ApiError,
        Block,
        Drop,
        Hang,
        Outage,
        Reply,
        ScriptStep,
        Text,
        ToolCall,
        ToolUse,
        Turn,
        Usage,
        bash,
        invalid_request,
        overloaded,
        rate_limited,
        read,
        server_error,
        unauthorized,
        write,
    )
    from ._routing import (
        Match,
        dispatch,
        keyed,
        when,
        when_main,
        when_notified,
        when_prompt,
        when_subagent,
        when_system,
    )
    from ._server import EXHAUSTED_TEXT, After, ScriptedServer, ScriptItem, seen
    from ._validation import validate_messages
