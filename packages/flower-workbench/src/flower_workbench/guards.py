"""The workbench's SDK hooks: plain ``HookMatcher``s for PostToolUse, usable by any Claude Agent SDK app."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio.to_thread

from ._spill import pointer_text, shrink, stash
from ._spill_reads import reads_spill
from .workbench import Workbench

# The SDK takes most of a second to import: the package's other parts (``spill_pointers``, `Workbench`, which
# ``flower analyze`` reads with) do not need it, so the guards import it when they build their matcher.
if TYPE_CHECKING:
    from claude_agent_sdk import HookContext, HookJSONOutput, HookMatcher

__all__ = ["BULKY_TOOLS", "DEFAULT_SPILL_THRESHOLD", "INDEXED_TOOLS", "index_guard", "spill_guard"]

BULKY_TOOLS = "Bash|Read|Grep|Glob|WebFetch|WebSearch"
INDEXED_TOOLS = "Write|Edit|MultiEdit|NotebookEdit|Bash"
DEFAULT_SPILL_THRESHOLD = 4000


def _cwd(data: Any, workbench: Workbench) -> Path:
    cwd = data.get("cwd") if isinstance(data, dict) else None
    return Path(cwd) if isinstance(cwd, str) and cwd else workbench.workspace


def spill_guard(
    workbench: Workbench,
    *,
    threshold: int = DEFAULT_SPILL_THRESHOLD,
    tools: str = BULKY_TOOLS,
    main_only: bool = False,
) -> HookMatcher:
    """PostToolUse: string fields of a tool output of ``threshold`` characters or more go to ``spill/``.

    The model gets, in the tool's own output shape, a pointer with the size and path plus the first 400
    characters. A call that reads a spill file — by any path form — is passed through untouched, so the
    pointer's "Read it for the full text" never loops. ``main_only`` leaves subagents' outputs alone.
    """
    # Imported here: the SDK takes ~1 s to import; `flower analyze` imports this package, builds no hook
    from claude_agent_sdk import HookMatcher

    if threshold < 1:
        raise ValueError(f"threshold must be a positive number of characters, not {threshold}")

    def spill(text: str) -> str:
        path = stash(workbench.spill, text)
        return pointer_text(len(text), workbench.show(path), text)

    def respond(data: dict[str, Any]) -> HookJSONOutput:
        if main_only and data.get("agent_id"):
            return {}
        if reads_spill(data.get("tool_input"), _cwd(data, workbench), workbench.spill):
            return {}
        shrunk, changed = shrink(data.get("tool_response"), threshold, spill)
        if not changed:
            return {}
        return {"hookSpecificOutput": {"hookEventName": "PostToolUse", "updatedToolOutput": shrunk}}

    async def hook(data: Any, tool_use_id: str | None, context: HookContext) -> HookJSONOutput:
        if not isinstance(data, dict):
            return {}
        # File I/O (hashing, writing up to megabytes) stays off the event loop the SDK shares with the app.
        return await anyio.to_thread.run_sync(respond, data)

    return HookMatcher(matcher=tools, hooks=[hook])


def _edited_path(data: dict[str, Any]) -> str | None:
    tool_input = data.get("tool_input") or {}
    for key in ("file_path", "notebook_path"):
        value = tool_input.get(key) if isinstance(tool_input, dict) else None
        if isinstance(value, str) and value:
            return value
    return None


def index_guard(workbench: Workbench, *, tools: str = INDEXED_TOOLS) -> HookMatcher:
    """PostToolUse: keep INDEX.md current when a file under the workbench is written, edited or created.

    Write/Edit/NotebookEdit name their file; for Bash (``cat > …``, ``cp``, a script's output) the
    workbench's names, sizes and mtimes are compared with the last refresh, which costs a directory walk
    and no file reads.
    """
    # Imported here: the SDK takes ~1 s to import; `flower analyze` imports this package, builds no hook
    from claude_agent_sdk import HookMatcher

    def respond(data: dict[str, Any]) -> None:
        edited = _edited_path(data)
        if edited is not None:
            path = Path(edited).expanduser()
            if not path.is_absolute():
                path = _cwd(data, workbench) / path
            if path.resolve().is_relative_to(workbench.root):
                workbench.refresh()
        elif data.get("tool_name") == "Bash":
            workbench.refresh_if_changed()

    async def hook(data: Any, tool_use_id: str | None, context: HookContext) -> HookJSONOutput:
        if isinstance(data, dict):
            try:
                await anyio.to_thread.run_sync(respond, data)
            except OSError:
                pass  # a stale index must never fail the tool call it follows
        return {}

    return HookMatcher(matcher=tools, hooks=[hook])
