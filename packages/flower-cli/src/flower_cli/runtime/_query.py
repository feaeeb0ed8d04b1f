"""The Runtime's seam to the model: the function it calls for one launch of Claude Code.

The default is the SDK's own ``query``, driven by flower-resilience so that closing it early ends the harness
subprocess. Anything else with the same keyword signature can stand in: the Runtime's unit tests pass one that
yields scripted SDK messages, so the interrupt, handoff and overflow branches run without a harness. The
resilience layer stays in front of it either way: a stand-in's failures are classified and retried as real ones.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from claude_agent_sdk import ClaudeAgentOptions, Message

__all__ = ["QueryFunction"]


class QueryFunction(Protocol):
    """``claude_agent_sdk.query`` as the Runtime calls it: one prompt, the step's options, the messages."""

    def __call__(self, *, prompt: str, options: ClaudeAgentOptions) -> AsyncIterator[Message]: ...
