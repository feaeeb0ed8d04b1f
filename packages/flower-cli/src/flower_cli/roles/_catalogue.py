"""The roles flower is made of: a coordinator that delegates, workers that do the work, a clarifier, a judge
and a read-only oracle — each a factory returning an `AgentSpec` (or, for a worker, an SDK
``AgentDefinition``), with its tools, its walls and its rules.

Walls are hooks, not prompt text: ``allowed_tools`` only pre-approves tools, so the Runtime installs
`delegate_guard` on a coordinator (whether or not a workbench is configured), `whitelist_guard` on the other
roles, and `isolate_guard` when a worker is isolated. The rule texts live in `flower_cli.roles._rules`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

# This module is imported only by code that builds roles or runs workflows, never on `flower --help`'s path,
# so the SDK (needed for the worker type) can be imported at the top.
from claude_agent_sdk import AgentDefinition, EffortLevel, PermissionMode

from ..runtime import AgentSpec, CompactPolicy, IsolatedAgentDefinition, main_thread_guard, merge_hooks
from ._rules import CLARIFIER_RULES, COORDINATOR_RULES, JUDGE_RULES, ORACLE_RULES, WORKER_RULES

if TYPE_CHECKING:
    from ..runtime import Channel

__all__ = [
    "COORDINATOR_TOOLS",
    "WORKER_TOOLS",
    "clarify",
    "coordinator",
    "judge",
    "oracle",
    "worker",
]

# What a worker gets unless told otherwise.
WORKER_TOOLS = ("Read", "Write", "Edit", "Bash", "Glob", "Grep", "WebFetch", "WebSearch")
# What the coordinator's own thread uses: dispatch, follow up, list, stop, plan.
COORDINATOR_TOOLS = ("Agent", "SendMessage", "ListAgents", "TaskStop", "TodoWrite")
_READ_TOOLS = ("Read", "Glob", "Grep")
_WEB_TOOLS = ("WebFetch", "WebSearch")


def worker(
    description: str,
    prompt: str,
    *,
    tools: Sequence[str] | None = None,
    model: str | None = "inherit",
    effort: EffortLevel | int | None = None,
    max_turns: int | None = None,
    permission_mode: PermissionMode | None = None,
    skills: Sequence[str] | None = None,
    discipline: bool = True,
    isolate: bool = False,
) -> AgentDefinition:
    """A worker the coordinator dispatches with the Agent tool (an SDK ``AgentDefinition``).

    ``description`` tells the coordinator when to use it; ``prompt`` is the worker's own instructions, with
    the reporting rules (`WORKER_RULES`) appended when ``discipline`` is on. ``isolate=True`` gives each
    dispatch its own git worktree (enforced by `isolate_guard`, not by prompt text); the workspace must then
    be a git repository with at least one commit.
    """
    if not description.strip():
        raise ValueError("a worker needs a description: it is how the coordinator knows when to use it")
    text = f"{prompt.rstrip()}\n\n{WORKER_RULES}" if discipline else prompt
    cls = IsolatedAgentDefinition if isolate else AgentDefinition
    return cls(
        description=description,
        prompt=text.strip(),
        tools=list(WORKER_TOOLS if tools is None else tools),
        model=model,
        skills=list(skills) if skills is not None else None,
        maxTurns=max_turns,
        effort=effort,
        permissionMode=permission_mode,
    )


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(i for i in items if i))


def coordinator(
    name: str = "coordinator",
    instructions: str = "",
    workers: Mapping[str, AgentDefinition] | None = None,
    *,
    channel: Channel | None = None,
    can_read: bool = True,
    glance: bool = True,
    tools: Sequence[str] = (),
    model: str | None = None,
    effort: str | None = None,
    max_turns: int | None = None,
    max_budget_usd: float | None = None,
    permission_mode: str = "acceptEdits",
    compact: CompactPolicy | None = None,
    hooks: dict[str, list[Any]] | None = None,
    env: Mapping[str, str] | None = None,
) -> AgentSpec:
    """A main agent that only decides and delegates; ``workers`` (name → `worker(...)`) do the work.

    Its own thread may dispatch, follow up, list and stop workers, plan, read (``can_read``) and glance
    (``glance``: read-only shell commands, exactly those `flower_stores.is_ephemeral` accepts). Bash, Write,
    Edit and NotebookEdit are walled off on its thread by `delegate_guard`, which the Runtime installs for
    every coordinator. The workers' tools are added to the approval list too: approval is per session, so
    a worker's Bash would otherwise wait for a human who is not there. ``channel`` adds its ask and inbox
    tools; ``tools`` adds any other tool (the harness's own Workflow or ScheduleWakeup are only offered when
    named here).
    """
    team = dict(workers or {})
    allowed = list(COORDINATOR_TOOLS)
    if can_read:
        allowed += _READ_TOOLS
    if glance:
        allowed.append("Bash")
    mcp: dict[str, Any] = {}
    if channel is not None:
        allowed += [channel.ask_tool, channel.inbox_tool]
        mcp.update(channel.mcp_servers())
    for definition in team.values():
        allowed += list(getattr(definition, "tools", None) or ())
    allowed += list(tools)
    own_hooks = hooks
    if not can_read:
        # Workers need Read approved; the coordinator's thread must still not read when told so.
        wall = main_thread_guard(
            _READ_TOOLS, f"{name} works without reading files itself: send a worker to read and report."
        )
        own_hooks = merge_hooks(hooks, {"PreToolUse": [wall]})
    return AgentSpec(
        name=name,
        instructions=f"{COORDINATOR_RULES}\n{instructions}".strip(),
        allowed_tools=_unique(allowed),
        model=model,
        effort=effort,
        max_turns=max_turns,
        max_budget_usd=max_budget_usd,
        permission_mode=permission_mode,
        agents=team or None,
        mcp_servers=mcp,
        hooks=own_hooks,
        compact=compact,
        env=dict(env or {}),
        glance=glance,
        workbench=True,
        delegate_only=True,
    )


def clarify(
    name: str = "clarify",
    channel: Channel | None = None,
    *,
    instructions: str = "",
    can_read: bool = True,
    model: str | None = None,
    effort: str | None = None,
    max_turns: int | None = None,
    max_budget_usd: float | None = None,
) -> AgentSpec:
    """The clarifier: asks the human (through ``channel``) what changes the approach, writes the four-part brief.

    ``max_turns`` stays unset by default: every question costs a turn, and a cap silently cuts questioning.
    Permission mode stays "default" and it has no Write/Edit/Bash/Agent: it reads, asks, and answers.
    """
    allowed: list[str] = [channel.ask_tool] if channel is not None else []
    if can_read:
        allowed += [*_READ_TOOLS, *_WEB_TOOLS]
    return AgentSpec(
        name=name,
        instructions=f"{CLARIFIER_RULES}\n{instructions}".strip(),
        allowed_tools=_unique(allowed),
        disallowed_tools=["Agent"],
        model=model,
        effort=effort,
        max_turns=max_turns,
        max_budget_usd=max_budget_usd,
        mcp_servers=channel.mcp_servers() if channel is not None else {},
        workbench=False,
    )


def judge(
    name: str = "judge",
    channel: Channel | None = None,
    *,
    instructions: str = "",
    can_run: bool = False,
    model: str | None = None,
    effort: str | None = None,
    max_turns: int | None = None,
    max_budget_usd: float | None = None,
) -> AgentSpec:
    """The judge: sets a checkable goal (mode A) or judges a round against it (mode B); see `JUDGE_RULES`.

    It reads (and runs commands with ``can_run=True``) but never writes, and it cannot dispatch agents. With a
    ``channel`` it may ask the human.
    """
    allowed: list[str] = [channel.ask_tool] if channel is not None else []
    allowed += _READ_TOOLS
    if can_run:
        allowed.append("Bash")
    return AgentSpec(
        name=name,
        instructions=f"{JUDGE_RULES}\n{instructions}".strip(),
        allowed_tools=_unique(allowed),
        disallowed_tools=["Agent"],
        model=model,
        effort=effort,
        max_turns=max_turns,
        max_budget_usd=max_budget_usd,
        mcp_servers=channel.mcp_servers() if channel is not None else {},
        workbench=False,
    )


def oracle(
    name: str = "aside",
    *,
    instructions: str = "",
    model: str | None = None,
    effort: str | None = None,
    max_turns: int | None = 12,
    max_budget_usd: float | None = 0.5,
) -> AgentSpec:
    """The read-only side channel for a quick question about a running job (small turn and cost caps)."""
    return AgentSpec(
        name=name,
        instructions=f"{ORACLE_RULES}\n{instructions}".strip(),
        allowed_tools=list(_READ_TOOLS),
        disallowed_tools=["Agent"],
        model=model,
        effort=effort,
        max_turns=max_turns,
        max_budget_usd=max_budget_usd,
        workbench=True,
    )
