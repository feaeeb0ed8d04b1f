"""The human channel in a real Claude Code session: the model asks through ``mcp__human__ask``, a person
answers from another thread, and the answer reaches the model in the tool result."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from flower_cli import AgentSpec, Event, HumanChannel, Runtime
from flower_cli.go import route_line
from flower_cli.go._human import TIMEOUT_TEXT
from flower_cli.go._routing import Answer
from harness import ScriptedServer, Text, ToolUse, result_text

pytestmark = pytest.mark.e2e

QUESTION = "Which database should the ledger use?"
OPTIONS = ["SQLite", "PostgreSQL"]


def _spec(channel: HumanChannel) -> AgentSpec:
    return AgentSpec(
        "clarifier",
        "Ask the person what you cannot decide yourself.",
        allowed_tools=["Read", channel.ask_tool, channel.inbox_tool],
        mcp_servers=channel.mcp_servers(),
        workbench=False,
    )


def _ask_result(server: ScriptedServer) -> str:
    """The text of the tool_result that answered the model's ask (in the request after the call)."""
    for request in server.message_requests:
        for block in request.tool_results():
            return result_text(block)
    return ""


async def test_an_answer_from_another_thread_reaches_the_model(claude_env: ScriptedServer, workspace: Path) -> None:
    claude_env.script(
        ToolUse("mcp__human__ask", {"question": QUESTION, "options": OPTIONS}),
        Text("Going with SQLite."),
    )
    log = workspace / "notes" / "qa-log.md"
    asked = threading.Event()
    events: list[Event] = []

    def on_event(event: Event) -> None:
        events.append(event)
        if event.kind == "ask" and event.payload.get("state") == "asked":
            asked.set()

    channel = HumanChannel(on_event=on_event, timeout_s=120, log_path=log)
    answered: list[bool] = []

    def person() -> None:
        # The stdin thread's part: wait for the question, route the typed "1", answer — from this thread.
        if asked.wait(120):
            route = route_line("1", channel.pending())
            assert isinstance(route, Answer)
            answered.append(channel.answer(route.id, route.text))

    helper = threading.Thread(target=person, daemon=True)
    helper.start()
    with Runtime(workspace, workspace / "runs") as rt:
        result = await rt.run(_spec(channel), "Set up the ledger.", on_event=channel.on_event)
    helper.join(30)

    assert result.ok, result.error
    assert answered == [True]
    assert claude_env.rejected == [] and claude_env.unscripted == []
    first = claude_env.message_requests[0].json
    assert "mcp__human__ask" in [t.get("name") for t in first.get("tools", [])]
    assert "The person answered:\nSQLite" in _ask_result(claude_env)

    states = [e.payload["state"] for e in events if e.kind == "ask"]
    assert states == ["asked", "answered"]
    record = log.read_text(encoding="utf-8")
    assert "**Q** (q1 · " in record and QUESTION in record
    assert "options: SQLite / PostgreSQL" in record and "**A** [answered] SQLite" in record


async def test_a_slow_answer_is_not_moved_to_the_background(
    claude_env: ScriptedServer, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Claude Code moves an MCP call that runs longer than its auto-background delay into a background task
    # and tells the model to carry on; a question waiting on a person must stay in the foreground.
    monkeypatch.setenv("CLAUDE_AUTO_BACKGROUND_TASKS", "1")
    monkeypatch.setenv("CLAUDE_CODE_MCP_AUTO_BACKGROUND_MS", "300")
    claude_env.script(ToolUse("mcp__human__ask", {"question": QUESTION}), Text("Going with SQLite."))
    asked = threading.Event()
    channel = HumanChannel(on_event=lambda e: asked.set() if e.payload.get("state") == "asked" else None, timeout_s=120)

    def person() -> None:
        if asked.wait(120):
            time.sleep(2)  # well past the 300 ms delay: the harness would have backgrounded the call by now
            channel.answer(channel.pending()[0].id, "SQLite, please")

    helper = threading.Thread(target=person, daemon=True)
    helper.start()
    with Runtime(workspace, workspace / "runs") as rt:
        result = await rt.run(_spec(channel), "Set up the ledger.", on_event=channel.on_event)
    helper.join(30)

    assert result.ok, result.error
    assert _ask_result(claude_env) == "The person answered:\nSQLite, please"
    assert claude_env.unscripted == []


async def test_timeout_zero_falls_through_at_once(claude_env: ScriptedServer, workspace: Path) -> None:
    claude_env.script(
        ToolUse("mcp__human__ask", {"question": QUESTION, "options": OPTIONS}),
        Text("Assuming SQLite."),
    )
    log = workspace / "notes" / "qa-log.md"
    events: list[Event] = []
    channel = HumanChannel(on_event=events.append, timeout_s=0, log_path=log)
    started = time.monotonic()
    with Runtime(workspace, workspace / "runs") as rt:
        result = await rt.run(_spec(channel), "Set up the ledger.", on_event=channel.on_event)

    assert result.ok, result.error
    assert claude_env.rejected == [] and claude_env.unscripted == []
    reply = _ask_result(claude_env)
    assert reply == TIMEOUT_TEXT and "record the assumption" in reply
    asks = [e for e in events if e.kind == "ask"]
    assert [e.payload["state"] for e in asks] == ["timeout"]
    assert asks[0].text == QUESTION  # the timeout event carries the question's text
    assert "**A** [timeout]" in log.read_text(encoding="utf-8")
    assert time.monotonic() - started < 120  # no wait: the whole run is the two scripted turns
