"""What a role needs from a human channel: an MCP server with an ``ask`` and an ``inbox`` tool.

The roles (`coordinator`, `clarify`, `judge`) and `Workflow` depend only on this Protocol, not on the
terminal implementation (``flower_cli.go._human.HumanChannel``), so a test, a web UI or another program can
plug in its own channel. A channel is an in-process SDK MCP server named ``human`` (build it with
``claude_agent_sdk.create_sdk_mcp_server``) whose tools the harness exposes to the model as
``mcp__human__ask`` and ``mcp__human__inbox``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from ._events import Event

__all__ = ["ASK_TOOL", "Channel", "INBOX_TOOL", "SERVER_NAME"]

SERVER_NAME = "human"
ASK_TOOL = f"mcp__{SERVER_NAME}__ask"
INBOX_TOOL = f"mcp__{SERVER_NAME}__inbox"


@runtime_checkable
class Channel(Protocol):
    """A way for agents to reach a human: ``ask`` blocks for an answer, ``inbox`` returns queued mail.

    ``on_event`` receives the channel's own events (questions asked, answered, timed out, mail); a
    `Workflow` wires it to the run's event sink when it is ``None`` (so one renderer shows everything).
    """

    on_event: Callable[[Event], Any] | None

    @property
    def ask_tool(self) -> str:
        """The model-facing name of the ask tool, ``mcp__human__ask``."""
        ...

    @property
    def inbox_tool(self) -> str:
        """The model-facing name of the inbox tool, ``mcp__human__inbox``."""
        ...

    def mcp_servers(self) -> dict[str, Any]:
        """``{"human": <SDK MCP server config>}``, ready for ``ClaudeAgentOptions.mcp_servers``."""
        ...
