"""`Runtime.stop`: the running step ends at once, recorded, its lease released, nothing resumed.

The real binary against the scripted server (a Bash command that would run for two minutes; an in-process MCP
tool that never answers — what a fleet's question looks like while it waits for a person), and one stand-in
harness that cannot be interrupted (the fallback: the launch is closed).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from claude_agent_sdk import create_sdk_mcp_server, tool
from cli.test_runtime_lease import Model, init, rows, said

from flower_cli import AgentSpec, Event, Runtime
from harness import ScriptedServer, Text, ToolUse, bash

WAITER = AgentSpec("waiter", "You wait.", allowed_tools=["Bash"])


@pytest.fixture
def credential(isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """For the stand-in harness (the real one gets its credential from ``claude_env``)."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0000000000000000")


async def _stop_when(rt: Runtime, seen: anyio.Event, reason: str, took: list[float]) -> None:
    await seen.wait()
    started = time.monotonic()
    await rt.stop(reason)
    took.append(time.monotonic() - started)


async def test_stop_in_the_middle_of_a_bash_command_ends_the_step_at_once_and_records_it(
    claude_env: ScriptedServer, workspace: Path, tmp_path: Path
) -> None:
    claude_env.script(bash("python3 -c 'import time; time.sleep(120)'"))
    calling = anyio.Event()
    took: list[float] = []

    def on_event(event: Event) -> None:
        if event.kind == "tool_call":
            calling.set()

    with Runtime(workspace, tmp_path / "runs") as rt:
        started = time.monotonic()
        async with anyio.create_task_group() as tg:
            tg.start_soon(_stop_when, rt, calling, "stopped by the test", took)
            with anyio.fail_after(120):
                result = await rt.run(WAITER, "wait", on_event=on_event)
        total = time.monotonic() - started
        print(f"stop() returned after {took[0]:.2f} s; the step took {total:.1f} s in all")

        assert result.ok is False and result.error == "stopped by the test", result.error
        assert took[0] < 10, f"stop took {took[0]:.1f} s (the harness finishing its turn would take 5+ s)"
        assert len(claude_env.message_requests) == 1 and claude_env.unscripted == [], "the model was asked nothing more"
        [row] = rows(rt.run_dir)
        assert row["ok"] is False and row["error"] == "stopped by the test" and row["session_id"] == result.session_id
        assert result.session_id is not None
        assert await rt.store.read_lease(rt.project_key, result.session_id) is None, "the lease is released"  # type: ignore[attr-defined]

        # The stopped session is whole in the store, the interruption included, and goes on when resumed.
        claude_env.script(Text("GOING ON"))
        again = await rt.run(WAITER, "go on", resume=result.session_id)
        assert again.ok and again.text == "GOING ON" and again.session_id == result.session_id, again.error
        resumed = claude_env.message_requests[-1]
        assert "time.sleep(120)" in resumed.text and "interrupted" in resumed.text.lower()


async def test_stop_from_inside_a_tool_call_that_waits_sends_the_model_nothing_more(
    claude_env: ScriptedServer, workspace: Path, tmp_path: Path
) -> None:
    """The fleet's pause: the tool handler itself stops the step, then waits; its call is abandoned."""
    stopped: list[str] = []

    @tool("ask", "Ask the person a question and wait for the answer.", {"question": str})
    async def ask(args: dict[str, Any]) -> dict[str, Any]:
        stopped.append(args["question"])
        await rt.stop("paused for a question")
        await anyio.sleep_forever()
        return {}  # pragma: no cover - never reached

    spec = AgentSpec(
        "clarifier",
        "You ask.",
        allowed_tools=["mcp__human__ask"],
        mcp_servers={"human": create_sdk_mcp_server("human", tools=[ask])},
    )
    claude_env.script(ToolUse("mcp__human__ask", {"question": "English or French?"}))
    with Runtime(workspace, tmp_path / "runs") as rt:
        with anyio.fail_after(120):
            result = await rt.run(spec, "ask the person")
    assert stopped == ["English or French?"]
    assert result.ok is False and result.error == "paused for a question"
    assert len(claude_env.message_requests) == 1 and claude_env.unscripted == [], (
        "no request with the abandoned call's result"
    )


async def test_a_harness_that_cannot_be_interrupted_is_closed(
    credential: None, workspace: Path, tmp_path: Path
) -> None:
    """A stand-in without ``interrupt()``: the launch is closed instead, and the step still ends recorded."""
    blocked = anyio.Event()

    async def block(_launch: Any) -> None:
        blocked.set()
        await anyio.sleep_forever()

    model = Model([lambda sid: [init(sid), said(sid, "working"), block]])
    took: list[float] = []
    with Runtime(workspace, tmp_path / "runs", query_fn=model) as rt:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_stop_when, rt, blocked, "halted", took)
            with anyio.fail_after(30):
                result = await rt.run(WAITER, "work")
        assert result.ok is False and result.error == "halted"
        assert len(model.launches) == 1, "nothing resumed after the stop"
        [row] = rows(rt.run_dir)
        assert row["error"] == "halted"
        assert result.session_id is not None
        assert await rt.store.read_lease(rt.project_key, result.session_id) is None  # type: ignore[attr-defined]


async def test_stop_without_a_running_step_does_nothing(credential: None, workspace: Path, tmp_path: Path) -> None:
    model = Model([lambda sid: [init(sid), said(sid, "HELLO"), _ended(sid)]])
    with Runtime(workspace, tmp_path / "runs", query_fn=model) as rt:
        await rt.stop("too early")
        result = await rt.run(WAITER, "say hello")
        assert result.ok, result.error
        await rt.stop("too late")
        assert [r["ok"] for r in rows(rt.run_dir)] == [True]


def _ended(sid: str) -> Any:
    from cli.test_runtime_lease import ended

    return ended(sid, "HELLO")
