"""Small helpers for driving the real SDK + bundled Claude Code binary in tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import claude_agent_sdk
from claude_agent_sdk import ClaudeAgentOptions, ResultMessage, query

__all__ = ["agent_options", "bundled_claude", "collect", "final_result"]


def bundled_claude() -> Path:
    """The Claude Code binary shipped inside the ``claude-agent-sdk`` wheel."""
    return Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"


def agent_options(workspace: Path, **overrides: Any) -> ClaudeAgentOptions:
    """Options for a portable, non-interactive test agent: no user settings, the common tools pre-approved.

    Root cannot use ``bypassPermissions`` with Claude Code, so tools are approved through ``allowed_tools``.
    """
    values: dict[str, Any] = {
        "cwd": str(workspace),
        "setting_sources": [],
        "allowed_tools": ["Bash", "Read", "Write", "Edit", "Glob", "Grep", "Agent"],
        "cli_path": str(bundled_claude()),
    }
    values.update(overrides)
    return ClaudeAgentOptions(**values)


async def collect(prompt: str, options: ClaudeAgentOptions) -> list[Any]:
    """Run one query to its end and return every message."""
    return [message async for message in query(prompt=prompt, options=options)]


def final_result(messages: list[Any]) -> ResultMessage:
    results = [m for m in messages if isinstance(m, ResultMessage)]
    assert results, f"no ResultMessage among {[type(m).__name__ for m in messages]}"
    return results[-1]
