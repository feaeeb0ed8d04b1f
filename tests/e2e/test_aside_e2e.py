"""The ``?question`` aside with the real binary: answered by a read-only side runtime under ``runs/aside/``
while the main run works, and never seen by the main session.

One scripted server plays both sessions, routed by system prompt (the aside's rules vs the main role's
marker); `After` holds each side's reply until the other side's request has arrived, so the two really are
in flight at the same time.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import anyio
import pytest

from flower_cli import AgentSpec, AsideAnswer, Event, Runtime, StepResult, answer_aside, aside_context
from flower_cli.go._aside import ASIDE_RULES, ASIDE_TOOLS
from harness import (
    After,
    RecordedRequest,
    ScriptedServer,
    Step,
    Text,
    ToolUse,
    Usage,
    read,
    seen,
    unauthorized,
    when_main,
    when_prompt,
    when_system,
)

pytestmark = pytest.mark.e2e

MAIN_MARK = "MAIN-ROLE-7c1e: you build the ledger."
MAIN = when_system(MAIN_MARK) & when_main()
ASIDE = when_system(ASIDE_RULES.split(".")[0]) & when_main()
QUESTION = "QUESTION-a41f which database does the ledger use?"
BRIEF_MARK = "BRIEF-MARK-90d2"
ANSWER = "ASIDE-ANSWER: SQLite, per notes.txt."


def _main_spec() -> AgentSpec:
    return AgentSpec("main", MAIN_MARK, allowed_tools=["Read"], workbench=False)


def _notes(tmp_path: Path) -> Path:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "brief.md").write_text(f"## Goal\nA ledger. {BRIEF_MARK}\n", encoding="utf-8")
    (notes / "goal.md").write_text(
        "## Goal\nThe ledger stores entries.\n\n## Checks\n- entries persist\n", encoding="utf-8"
    )
    return notes


def _body(request: RecordedRequest) -> str:
    return json.dumps(request.json, ensure_ascii=False)


def _tool_names(request: RecordedRequest) -> set[str]:
    """The tools the model can call (the harness also sends a ``defer_loading`` placeholder it may not call)."""
    return {str(t.get("name")) for t in request.json.get("tools", []) if not t.get("defer_loading")}


def _session_ids(db: Path) -> set[str]:
    with sqlite3.connect(db) as con:
        tables = [row[0] for row in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        found: set[str] = set()
        for table in tables:
            columns = [row[1] for row in con.execute(f"PRAGMA table_info({table})")]
            if "session_id" in columns:
                found |= {str(row[0]) for row in con.execute(f"SELECT DISTINCT session_id FROM {table}")}
    return found


async def test_an_aside_is_answered_beside_the_main_run_and_never_reaches_it(
    claude_env: ScriptedServer, workspace: Path, tmp_path: Path
) -> None:
    (workspace / "notes.txt").write_text("The ledger uses SQLite.\n", encoding="utf-8")
    claude_env.script(
        # The main session's first reply waits for the aside's first request, and its last one for the
        # aside's second: both sessions are live at once.
        Step(After(seen(ASIDE), read(str(workspace / "notes.txt"))), MAIN),
        Step(After(seen(ASIDE, count=2), Text("MAIN-DONE")), MAIN),
        Step(After(seen(MAIN), read(str(workspace / "notes.txt"))), ASIDE),
        Step(Text(ANSWER), ASIDE),
    )
    context = aside_context(_notes(tmp_path), ["[tool_call/Read main] notes.txt"])
    run_dir = workspace / "runs"
    aside_events: list[Event] = []
    main: list[StepResult] = []
    aside: list[AsideAnswer] = []

    async def run_main() -> None:
        with Runtime(workspace, run_dir) as rt:
            main.append(await rt.run(_main_spec(), "Build the ledger."))

    async def ask() -> None:
        aside.append(
            await answer_aside(
                QUESTION, workspace=workspace, run_dir=run_dir, context=context, on_event=aside_events.append
            )
        )

    async with anyio.create_task_group() as tg:
        tg.start_soon(run_main)
        tg.start_soon(ask)

    [result], [answer] = main, aside
    assert result.ok and result.text == "MAIN-DONE", result.error
    assert answer.ok and answer.text == ANSWER, answer
    assert answer.session_id and answer.session_id != result.session_id
    assert claude_env.unscripted == [] and claude_env.rejected == []

    main_requests = [r for r in claude_env.message_requests if MAIN(r)]
    aside_requests = [r for r in claude_env.message_requests if ASIDE(r)]
    assert len(main_requests) == 2 and len(aside_requests) == 2
    # the question and the context the aside was given never reach the main session
    for request in main_requests:
        assert QUESTION not in _body(request) and BRIEF_MARK not in _body(request)
        assert ASIDE_RULES.split(".")[0] not in _body(request)
    assert QUESTION in aside_requests[0].first_user_text and BRIEF_MARK in aside_requests[0].first_user_text
    # read-only: the aside is offered exactly its three tools, and its Read ran
    assert _tool_names(aside_requests[0]) == set(ASIDE_TOOLS)
    assert "The ledger uses SQLite." in aside_requests[1].last_tool_result_text()

    # its own manifest and store under run_dir/aside; the main run's files know nothing of it
    aside_rows = json.loads((run_dir / "aside" / "manifest.json").read_text())
    assert [(r["step"], r["session_id"]) for r in aside_rows] == [("aside", answer.session_id)]
    main_rows = json.loads((run_dir / "manifest.json").read_text())
    assert [(r["step"], r["session_id"]) for r in main_rows] == [("main", result.session_id)]
    assert answer.session_id in _session_ids(run_dir / "aside" / "sessions.db")
    assert answer.session_id not in _session_ids(run_dir / "sessions.db")
    assert result.session_id not in _session_ids(run_dir / "aside" / "sessions.db")

    # the caller saw the aside's events, marked as the aside's
    assert aside_events and all(e.payload.get("aside") is True for e in aside_events)
    assert [e for e in aside_events if e.kind == "result"][-1].payload["session_id"] == answer.session_id


async def test_two_asides_at_once_each_get_their_own_answer(claude_env: ScriptedServer, workspace: Path) -> None:
    first, second = "FIRST-Q-11 what is it doing?", "SECOND-Q-22 how far along?"
    one, two = ASIDE & when_prompt(first), ASIDE & when_prompt(second)
    claude_env.script(
        Step(After(seen(two), Text("ANSWER-ONE")), one),
        Step(After(seen(one), Text("ANSWER-TWO")), two),
    )
    answers: dict[str, AsideAnswer] = {}

    async def ask(question: str) -> None:
        answers[question] = await answer_aside(question, workspace=workspace, run_dir=Path("runs"), context="")

    async with anyio.create_task_group() as tg:
        tg.start_soon(ask, first)
        tg.start_soon(ask, second)

    assert answers[first].ok and answers[first].text == "ANSWER-ONE"
    assert answers[second].ok and answers[second].text == "ANSWER-TWO"
    assert answers[first].session_id != answers[second].session_id
    rows = json.loads((workspace / "runs" / "aside" / "manifest.json").read_text())
    assert sorted(r["session_id"] for r in rows) == sorted(a.session_id for a in answers.values())


async def test_the_aside_cannot_write_or_run_commands(claude_env: ScriptedServer, workspace: Path) -> None:
    claude_env.script(
        Step(ToolUse("Write", {"file_path": str(workspace / "evil.txt"), "content": "x"}), ASIDE),
        Step(ToolUse("Bash", {"command": f"touch {workspace / 'evil2.txt'}"}), ASIDE),
        Step(Text("I can only read."), ASIDE),
    )
    answer = await answer_aside("please write evil.txt", workspace=workspace, run_dir=workspace / "runs", context="")

    assert answer.ok and answer.text == "I can only read.", answer
    assert not (workspace / "evil.txt").exists() and not (workspace / "evil2.txt").exists()
    results = [r.last_tool_result_text() for r in claude_env.message_requests[1:3]]
    assert all("No such tool available" in text for text in results), results


async def test_budget_exceeded_is_a_one_line_answer(claude_env: ScriptedServer, workspace: Path) -> None:
    # One turn that reports a huge usage costs far more than the aside's budget; the SDK stops it there.
    claude_env.script(
        Step(read(str(workspace / "x.txt"), usage=Usage(input_tokens=2_000_000, output_tokens=10)), ASIDE),
        Step(Text("never sent"), ASIDE),
    )
    (workspace / "x.txt").write_text("x\n")
    answer = await answer_aside(
        "how far along?", workspace=workspace, run_dir=workspace / "runs", context="", max_budget_usd=0.01
    )

    assert not answer.ok and answer.text == "the side question used up its $0.01 budget before it could answer", answer
    assert answer.cost_usd > 0.01  # the turn that crossed the budget is paid for...
    assert len(claude_env.message_requests) == 1 and claude_env.pending == 1  # ...and no turn after it


async def test_an_api_error_is_a_one_line_answer(claude_env: ScriptedServer, workspace: Path) -> None:
    claude_env.script(Step(unauthorized(), ASIDE))
    answer = await answer_aside("what now?", workspace=workspace, run_dir=workspace / "runs", context="")

    assert not answer.ok and "\n" not in answer.text and answer.text.startswith("the side question failed: "), answer
    assert "api key" in answer.text.lower() or "401" in answer.text, answer
    rows = json.loads((workspace / "runs" / "aside" / "manifest.json").read_text())
    assert [r["ok"] for r in rows] == [False]
