"""Roles (tools, walls, rules), the guards they install, worker attribution of events, and the renderer."""

from __future__ import annotations

import dataclasses
import io
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from claude_agent_sdk import (
    AgentDefinition,
    AssistantMessage,
    ToolUseBlock,
    UserMessage,
    create_sdk_mcp_server,
    tool,
)

from flower_cli import (
    BRIEF_SECTIONS,
    CLARIFIER_RULES,
    COORDINATOR_RULES,
    GOAL_SECTIONS,
    JUDGE_RULES,
    UNVERIFIABLE_MARK,
    VERDICT_SECTIONS,
    VERDICT_STATES,
    WORKER_RULES,
    Channel,
    Event,
    IsolatedAgentDefinition,
    Runtime,
    Workers,
    build_options,
    clarify,
    coordinator,
    delegate_guard,
    isolate_guard,
    judge,
    normalize,
    oracle,
    worker,
)
from flower_cli.runtime import isolation_problem
from flower_cli.runtime._isolation import is_isolated
from flower_cli.view import Renderer


class TinyChannel:
    """The smallest `Channel`: an in-process MCP server ``human`` with ask and inbox."""

    ask_tool = "mcp__human__ask"
    inbox_tool = "mcp__human__inbox"

    def __init__(self) -> None:
        self.on_event: Any = None

        @tool("ask", "Ask the human", {"question": str})
        async def ask(args: dict[str, Any]) -> dict[str, Any]:
            return {"content": [{"type": "text", "text": "nobody here"}]}

        @tool("inbox", "Read mail", {})
        async def inbox(args: dict[str, Any]) -> dict[str, Any]:
            return {"content": [{"type": "text", "text": "empty"}]}

        self._server = create_sdk_mcp_server("human", tools=[ask, inbox])

    def mcp_servers(self) -> dict[str, Any]:
        return {"human": self._server}


def call(matcher: Any, data: dict[str, Any]) -> dict[str, Any]:
    [hook] = matcher.hooks
    return anyio.run(hook, data, "tu1", {})  # type: ignore[no-any-return]


def decision(out: dict[str, Any]) -> str | None:
    return out.get("hookSpecificOutput", {}).get("permissionDecision")


# --- roles ----------------------------------------------------------------------------------------------


def test_coordinator_tools_wall_and_rules() -> None:
    team = {
        "coder": worker("codes", "You code.", tools=["Read", "Write", "Bash"]),
        "web": worker("reads the web", "x", tools=["WebFetch"]),
    }
    spec = coordinator("lead", "Be bold.", team)
    assert spec.delegate_only and spec.glance and spec.workbench and spec.permission_mode == "acceptEdits"
    assert spec.instructions.startswith(COORDINATOR_RULES.strip()[:40]) and spec.instructions.endswith("Be bold.")
    for needed in ("Agent", "SendMessage", "ListAgents", "TaskStop", "TodoWrite", "Read", "Glob", "Grep", "Bash"):
        assert needed in spec.allowed_tools
    # the workers' tools are pre-approved for the session (approval is per session), the wall keeps the main thread off them
    assert {"Write", "WebFetch"} <= set(spec.allowed_tools)
    assert spec.agents == team
    assert "Workflow" not in spec.allowed_tools and "ScheduleWakeup" not in spec.allowed_tools
    options = build_options(spec, cwd="/tmp")
    assert {"Workflow", "ScheduleWakeup"} <= set(options.disallowed_tools)
    assert "Workflow" not in build_options(coordinator(tools=["Workflow"]), cwd="/tmp").disallowed_tools


def test_coordinator_channel_and_no_read() -> None:
    channel = TinyChannel()
    assert isinstance(channel, Channel)
    spec = coordinator("lead", "", {}, channel=channel, can_read=False, glance=False)
    assert "mcp__human__ask" in spec.allowed_tools and "mcp__human__inbox" in spec.allowed_tools
    assert set(spec.mcp_servers) == {"human"}
    assert "Read" not in spec.allowed_tools and "Bash" not in spec.allowed_tools
    [wall] = (spec.hooks or {})["PreToolUse"]
    assert decision(call(wall, {"tool_name": "Read", "tool_input": {"file_path": "x"}})) == "deny"
    assert call(wall, {"tool_name": "Read", "tool_input": {}, "agent_id": "a1"}) == {}


def test_worker_definition_rules_and_isolation_survives_replace() -> None:
    plain = worker("codes", "You code.")
    assert type(plain) is AgentDefinition and plain.model == "inherit"
    assert plain.prompt.startswith("You code.") and WORKER_RULES.strip() in plain.prompt
    assert plain.tools == ["Read", "Write", "Edit", "Bash", "Glob", "Grep", "WebFetch", "WebSearch"]
    assert worker("x", "bare", discipline=False).prompt == "bare"
    iso = worker("codes", "You code.", isolate=True, max_turns=5)
    assert isinstance(iso, IsolatedAgentDefinition) and is_isolated(iso) and iso.maxTurns == 5
    copied = dataclasses.replace(iso, description="changed")
    assert is_isolated(copied), "the original's isolation marker was lost by dataclasses.replace"
    assert set(dataclasses.asdict(iso)) == {f.name for f in dataclasses.fields(AgentDefinition)}, (
        "nothing extra reaches the harness"
    )
    with pytest.raises(ValueError, match="description"):
        worker(" ", "x")


def test_clarify_judge_oracle() -> None:
    channel = TinyChannel()
    c = clarify("clarify", channel)
    assert c.allowed_tools[0] == "mcp__human__ask" and "Write" not in c.allowed_tools and "Agent" in c.disallowed_tools
    assert c.max_turns is None and not c.workbench and c.permission_mode == "default"
    j = judge("judge", channel)
    assert (
        "Bash" not in j.allowed_tools and "mcp__human__inbox" not in j.allowed_tools and "Agent" in j.disallowed_tools
    )
    assert "Bash" in judge("judge", channel, can_run=True).allowed_tools
    assert "mcp__human__ask" not in judge("judge", None).allowed_tools
    o = oracle()
    assert o.allowed_tools == ["Read", "Glob", "Grep"] and o.max_turns == 12 and o.max_budget_usd == 0.5 and o.workbench


def test_rule_texts_name_the_sections_the_parsers_read() -> None:
    for section in BRIEF_SECTIONS:
        assert f"## {section}" in CLARIFIER_RULES
    for section in (*GOAL_SECTIONS, *VERDICT_SECTIONS):
        assert f"## {section}" in JUDGE_RULES
    assert all(state in JUDGE_RULES for state in VERDICT_STATES) and UNVERIFIABLE_MARK in JUDGE_RULES


def test_isolation_problem(tmp_path: Path) -> None:
    spec = coordinator("lead", "", {"coder": worker("codes", "x", isolate=True)})
    assert "not a git repository" in (isolation_problem(spec, tmp_path) or "")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    assert "no commit yet" in (isolation_problem(spec, tmp_path) or "")
    subprocess.run(
        [
            "git",
            "-C",
            str(tmp_path),
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@e.invalid",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "i",
        ],
        check=True,
    )
    assert isolation_problem(spec, tmp_path) is None
    assert isolation_problem(coordinator("lead", "", {"coder": worker("codes", "x")}), "/nonexistent") is None


# --- guards ---------------------------------------------------------------------------------------------


def test_delegate_guard_denies_hands_on_allows_glances_passes_workers() -> None:
    wall = delegate_guard(allow_glance=True)
    assert decision(call(wall, {"tool_name": "Bash", "tool_input": {"command": "rm -rf x"}})) == "deny"
    assert call(wall, {"tool_name": "Bash", "tool_input": {"command": "git status"}}) == {}
    assert decision(call(wall, {"tool_name": "Write", "tool_input": {"file_path": "a"}})) == "deny"
    assert call(wall, {"tool_name": "Bash", "tool_input": {"command": "rm -rf x"}, "agent_id": "a1"}) == {}
    strict = delegate_guard(allow_glance=False)
    assert decision(call(strict, {"tool_name": "Bash", "tool_input": {"command": "git status"}})) == "deny"


def test_isolate_guard_adds_worktree_isolation_only_when_unset() -> None:
    guard = isolate_guard(["coder"])
    assert guard is not None and guard.matcher == "Agent"
    out = call(
        guard, {"tool_name": "Agent", "tool_input": {"description": "d", "prompt": "p", "subagent_type": "coder"}}
    )
    assert out["hookSpecificOutput"]["updatedInput"] == {
        "description": "d",
        "prompt": "p",
        "subagent_type": "coder",
        "isolation": "worktree",
    }
    assert decision(out) == "allow"
    assert call(guard, {"tool_name": "Agent", "tool_input": {"subagent_type": "coder", "isolation": "remote"}}) == {}
    assert call(guard, {"tool_name": "Agent", "tool_input": {"subagent_type": "coder", "cwd": "/x"}}) == {}
    assert call(guard, {"tool_name": "Agent", "tool_input": {"subagent_type": "general-purpose"}}) == {}
    assert isolate_guard([]) is None


def test_runtime_walls_a_coordinator_with_or_without_a_workbench(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, isolated_home: Path
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0")
    lead = coordinator("lead", "", {"coder": worker("codes", "x", isolate=True)})
    for workbench in (False, True):
        with Runtime(workspace, workbench=workbench) as rt:
            pre = rt._launcher().hooks(lead)["PreToolUse"]
            matchers = [m.matcher for m in pre]
            assert "Bash|Write|Edit|NotebookEdit" in matchers and "Agent" in matchers


# --- events: workers, turns, the answer -------------------------------------------------------------------


def _task(kind: str, **payload: Any) -> Event:
    return Event("task", payload.pop("text", ""), payload={"kind": kind, **payload})


def test_workers_tag_each_event_with_its_worker_and_track_liveness() -> None:
    w = Workers()
    dispatch = normalize(
        AssistantMessage(
            content=[
                ToolUseBlock("tu_a", "Agent", {"description": "write alpha", "prompt": "p"}),
                ToolUseBlock("tu_b", "Agent", {"description": "write beta", "prompt": "q"}),
            ],
            model="m",
        )
    )
    for event in dispatch:
        assert "worker" not in w.annotate(event).payload
    w.annotate(
        _task("TaskStartedMessage", task_id="A1", tool_use_id="tu_a", task_type="local_agent", text="write alpha")
    )
    w.annotate(
        _task("TaskStartedMessage", task_id="B2", tool_use_id="tu_b", task_type="local_agent", text="write beta")
    )
    w.annotate(
        _task("TaskStartedMessage", task_id="S3", tool_use_id="tu_s", task_type="local_bash", text="npm run dev")
    )
    assert w.live == {"A1": "write alpha", "B2": "write beta"}, "a background shell is not a worker"
    [sub] = normalize(
        AssistantMessage(
            content=[ToolUseBlock("t9", "Bash", {"command": "echo a"})], model="m", parent_tool_use_id="tu_a"
        )
    )
    tagged = w.annotate(sub)
    assert tagged.subagent and tagged.payload["worker"] == {"id": "A1", "description": "write alpha"}
    [res] = normalize(UserMessage(content="brief", parent_tool_use_id="tu_b"))
    assert w.annotate(res).payload["worker"]["id"] == "B2"
    done = w.annotate(
        _task("TaskNotificationMessage", task_id="A1", tool_use_id="tu_a", status="completed", text="ALPHA-DONE")
    )
    assert done.payload["worker"]["description"] == "write alpha"
    assert w.live == {"B2": "write beta"}
    w.annotate(_task("TaskUpdatedMessage", task_id="B2", status="killed"))
    assert w.live == {} and [t["status"] for t in w.summary()] == ["completed", "killed"]


def test_the_answer_is_the_final_turns_text() -> None:
    from flower_cli.runtime._step_state import Answer

    answer = Answer()
    answer.add("Dispatched both.")
    answer.turn_ended(Event("turn", "success", payload={"text": "Dispatched both.", "is_error": False}))
    answer.add("alpha is in")
    answer.turn_ended(
        Event("turn", "success", payload={"text": "", "is_error": False})
    )  # no text in the result: prose stands in
    assert answer.final(True) == "alpha is in"
    answer.add("FINAL")
    answer.turn_ended(Event("turn", "success", payload={"text": "FINAL", "is_error": False}))
    assert answer.final(True) == "FINAL" and answer.turns == 3
    answer.add("half a sentence")
    assert answer.final(False) == "half a sentence", "a failed attempt shows where it stopped"
    assert Answer().final(False) == ""


def test_renderer_nests_worker_calls_and_draws_one_line_per_step() -> None:
    out = io.StringIO()
    view = Renderer(out, color=False)
    events = [
        Event(
            "tool_call",
            "",
            tool="Agent",
            payload={"id": "tu_a", "input": {"description": "write alpha", "subagent_type": "coder"}},
        ),
        Event(
            "tool_call",
            "echo b",
            tool="Bash",
            subagent=True,
            payload={"worker": {"id": "B", "description": "write beta"}},
        ),
        Event(
            "tool_call",
            "echo a",
            tool="Bash",
            subagent=True,
            payload={"worker": {"id": "A", "description": "write alpha"}},
        ),
        Event(
            "tool_call", "ls", tool="Bash", subagent=True, payload={"worker": {"id": "A", "description": "write alpha"}}
        ),
        Event(
            "turn",
            "success",
            payload={"total_cost_usd": 0.2, "live_workers": [{"id": "A", "description": "write alpha"}]},
        ),
        Event(
            "task",
            "ALPHA-DONE",
            payload={
                "kind": "TaskNotificationMessage",
                "status": "completed",
                "worker": {"id": "A", "description": "write alpha"},
            },
        ),
        Event("turn", "success", payload={"total_cost_usd": 0.3, "live_workers": []}),
        Event("result", "success", payload={"cost_usd": 0.3, "num_turns": 4, "is_error": False}),
    ]
    for event in events:
        view.render(event)
    text = out.getvalue()
    assert "> dispatch coder: write alpha" in text
    assert text.count("| write alpha") == 1 and text.count("| write beta") == 1
    assert "|   * Bash echo a\n  |   * Bash ls" in text
    assert "~ waiting for 1 worker: write alpha" in text and "# write alpha: completed" in text
    assert text.count("+ done") == 1 and view.cost == pytest.approx(0.3)
