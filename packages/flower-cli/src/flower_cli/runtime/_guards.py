"""Guards the Runtime installs around a role: hook merging and the main-thread tool walls.

``allowed_tools`` only pre-approves tools; it does not forbid the others. These PreToolUse hooks make the
wall real on the main thread (subagents — hook input with an ``agent_id`` — pass through).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from claude_agent_sdk import HookJSONOutput, HookMatcher

__all__ = [
    "HANDS_ON",
    "HARNESS_SCHEDULERS",
    "delegate_guard",
    "guard_kind",
    "isolate_guard",
    "main_thread_guard",
    "merge_hooks",
    "whitelist_guard",
]

HANDS_ON = ("Bash", "Write", "Edit", "NotebookEdit")
# The harness's own tools that schedule work outside the step (a multi-agent workflow it runs itself, a
# wake-up or a cron prompt later). A step would "end" while work it cannot see goes on, so no role gets them
# unless its spec names them in allowed_tools; build_options disallows the rest, which also takes them out
# of the tool list the model sees (a denied call would still cost a turn).
HARNESS_SCHEDULERS = ("Workflow", "ScheduleWakeup", "CronCreate", "CronDelete", "CronList")

Hooks = dict[str, list[Any]]

# How the denials below begin and go on: `guard_kind` reads them back out of a refused call's result.
_NOT_GIVEN = " This is deliberate, not a missing setting:"
_COORDINATOR = "The coordinator "


def merge_hooks(*groups: Mapping[str, Iterable[Any]] | None) -> Hooks:
    """Concatenate hook matchers per event, in argument order; ``None`` groups and empty events vanish."""
    merged: Hooks = {}
    for group in groups:
        for event, matchers in (group or {}).items():
            merged.setdefault(event, []).extend(matchers)
    return {event: matchers for event, matchers in merged.items() if matchers}


def _deny(reason: str) -> HookJSONOutput:
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }
    }


def main_thread_guard(tools: Iterable[str], reason: str) -> HookMatcher:
    """Deny ``tools`` on the main thread with ``reason``; subagents (hook input with ``agent_id``) pass."""
    from claude_agent_sdk import HookMatcher  # lazy: _events, read without the SDK, imports this module

    names = list(dict.fromkeys(tools))
    if not names:
        raise ValueError("main_thread_guard needs at least one tool name")

    async def guard(data: Any, tool_use_id: str | None, context: Any) -> HookJSONOutput:
        if data.get("agent_id"):
            return {}
        return _deny(reason)

    return HookMatcher(matcher="|".join(names), hooks=[guard])


def isolate_guard(isolated: Iterable[str]) -> HookMatcher | None:
    """Give every dispatch of an ``isolated`` worker type its own git worktree.

    A PreToolUse hook on Agent: when the call names one of these ``subagent_type``s and sets neither
    ``isolation`` nor ``cwd``, it is allowed with ``isolation: "worktree"`` added. Enforced here rather than
    asked for in a prompt, so a coordinator cannot forget it. ``None`` when no worker is isolated.
    """
    from claude_agent_sdk import HookMatcher  # lazy: _events, read without the SDK, imports this module

    names = set(isolated)
    if not names:
        return None

    async def guard(data: Any, tool_use_id: str | None, context: Any) -> HookJSONOutput:
        tool_input = data.get("tool_input")
        if not isinstance(tool_input, dict) or tool_input.get("subagent_type") not in names:
            return {}
        if tool_input.get("isolation") or tool_input.get("cwd"):
            return {}
        return {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "allow",
                "updatedInput": {**tool_input, "isolation": "worktree"},
            }
        }

    return HookMatcher(matcher="Agent", hooks=[guard])


def whitelist_guard(allowed: Iterable[str], *, role: str = "this role") -> HookMatcher | None:
    """Refuse hands-on tools the role was not given (main thread only). ``None`` when nothing is banned."""
    from claude_agent_sdk import HookMatcher  # lazy: _events, read without the SDK, imports this module

    allowed_set = set(allowed)
    banned = [tool for tool in HANDS_ON if tool not in allowed_set]
    if not banned:
        return None

    async def guard(data: Any, tool_use_id: str | None, context: Any) -> HookJSONOutput:
        if data.get("agent_id"):
            return {}
        tool = data.get("tool_name", "")
        return _deny(
            f"{role} has no {tool}.{_NOT_GIVEN} put your conclusion in your reply "
            "text, the runtime takes it from there. Do not try another way around it."
        )

    return HookMatcher(matcher="|".join(banned), hooks=[guard])


def delegate_guard(*, allow_glance: bool = False, artifacts: str = ".flower/artifacts/") -> HookMatcher:
    """The coordinator's wall: no hands-on tools on the main thread; read-only glances allowed if asked.

    A glance is exactly what ``flower_stores.is_ephemeral`` accepts — the same predicate decides which
    results expire, so what the coordinator may run and what goes stale are one set.
    """
    from claude_agent_sdk import HookMatcher  # lazy: _events, read without the SDK, imports this module

    from flower_stores import is_ephemeral  # lazy: it loads the SDK (see above)

    async def guard(data: Any, tool_use_id: str | None, context: Any) -> HookJSONOutput:
        if data.get("agent_id"):
            return {}
        tool = data.get("tool_name", "")
        command = (data.get("tool_input") or {}).get("command")
        if allow_glance and tool == "Bash" and isinstance(command, str) and is_ephemeral(command):
            return {}
        dispatch = (
            "Dispatch a worker with the Agent tool: give it the goal and the acceptance criteria, and ask it to "
            f"write long output into {artifacts} and reply with the path and its conclusion."
        )
        if allow_glance and tool == "Bash":
            return _deny(
                f"{_COORDINATOR}only runs read-only glances itself (git status, ls, cat, grep …); this command "
                f"is not one. {dispatch}"
            )
        return _deny(f"{_COORDINATOR}does not use {tool} itself. {dispatch}")

    return HookMatcher(matcher="|".join(HANDS_ON), hooks=[guard])


def guard_kind(reason: str) -> str | None:
    """Which wall above refused a call, from the reason its denial gave (as the harness reports it back):
    ``"not-allowed"`` (`whitelist_guard`: the role was not given the tool), ``"delegated"`` (`delegate_guard`:
    the coordinator's work is done by workers), or None for a hook of someone else's."""
    if reason.startswith(_COORDINATOR):
        return "delegated"
    if re.match(r".+ has no \S+\." + re.escape(_NOT_GIVEN), reason, flags=re.S):
        return "not-allowed"
    return None
