"""Calling the guards' real hook callables with hook input shaped like what Claude Code sends."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import anyio

__all__ = ["bash_response", "post", "run_hook", "spill_name"]


def run_hook(matcher: Any, data: dict[str, Any]) -> dict[str, Any]:
    async def call() -> dict[str, Any]:
        return await matcher.hooks[0](data, data.get("tool_use_id"), {"signal": None})

    return anyio.run(call)


def post(tool: str, tool_input: dict[str, Any], response: Any, cwd: Path, **extra: Any) -> dict[str, Any]:
    return {
        "hook_event_name": "PostToolUse",
        "session_id": "s",
        "transcript_path": "",
        "cwd": str(cwd),
        "tool_name": tool,
        "tool_input": tool_input,
        "tool_response": response,
        "tool_use_id": "toolu_1",
        **extra,
    }


def bash_response(stdout: str, **extra: Any) -> dict[str, Any]:
    return {"stdout": stdout, "stderr": "", "interrupted": False, "isImage": False, "noOutputExpected": False, **extra}


def spill_name(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16] + ".txt"
