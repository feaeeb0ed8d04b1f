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

from typing import TYPE_CHECKING

from .._shared.lazy import lazy_surface

if TYPE_CHECKING:
    from ._environment import DUMMY_API_KEY as DUMMY_API_KEY
    from ._environment import offline_environment as offline_environment
    from ._recorded import RecordedRequest as RecordedRequest
    from ._recorded import result_text as result_text
    from ._replies import ApiError as ApiError
    from ._replies import Block as Block
    from ._replies import Drop as Drop
    from ._replies import Hang as Hang
    from ._replies import Outage as Outage
    from ._replies import Reply as Reply
    from ._replies import ScriptStep as ScriptStep
    from ._replies import Text as Text
    from ._replies import ToolCall as ToolCall
    from ._replies import ToolUse as ToolUse
    from ._replies import Turn as Turn
    from ._replies import Usage as Usage
    from ._replies import UsageLimited as UsageLimited
    from ._replies import bash as bash
    from ._replies import invalid_request as invalid_request
    from ._replies import overloaded as overloaded
    from ._replies import rate_limited as rate_limited
    from ._replies import read as read
    from ._replies import server_error as server_error
    from ._replies import spend_capped as spend_capped
    from ._replies import unauthorized as unauthorized
    from ._replies import usage_limited as usage_limited
    from ._replies import write as write
    from ._routing import Match as Match
    from ._routing import dispatch as dispatch
    from ._routing import keyed as keyed
    from ._routing import when as when
    from ._routing import when_main as when_main
    from ._routing import when_notified as when_notified
    from ._routing import when_prompt as when_prompt
    from ._routing import when_subagent as when_subagent
    from ._routing import when_system as when_system
    from ._server import EXHAUSTED_TEXT as EXHAUSTED_TEXT
    from ._server import After as After
    from ._server import ScriptedServer as ScriptedServer
    from ._server import ScriptItem as ScriptItem
    from ._server import seen as seen
    from ._validation import validate_messages as validate_messages

__all__ = lazy_surface(__name__)
