"""flower-fleet's go runs past the first round, and the questions asked on the way: judged rounds that continue the
one work session with the judge's feedback (and run out), a judge's and a gate's question that fall through
without pausing, a coordinator's question that pauses the work phase until `flower fleet answer`, and a question
nobody answers within the run's question timeout. Real binary, real Temporal dev server, real PostgreSQL, one
scripted Messages API playing every role by its system prompt (as tests/fleet/test_fleet_go_e2e.py)."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import pytest
from fleet_helpers import Fleet, status_json, verdict, wait_for, worker_logs

from flower_cli import CLARIFIER_RULES, COORDINATOR_RULES, JUDGE_RULES
from flower_cli.go._human import TIMEOUT_TEXT
from flower_fleet import step_session_id
from harness import RecordedRequest, ScriptedServer, Text, ToolUse, keyed, when, when_main, when_prompt, when_system

pytestmark = pytest.mark.e2e

CLARIFIER = when_system(CLARIFIER_RULES.splitlines()[0])
LEAD = when_system(COORDINATOR_RULES.splitlines()[0]) & when_main()
GOAL_SETTER = when_system(JUDGE_RULES.splitlines()[0]) & when_prompt("Mode A")
JUDGE = when_system(JUDGE_RULES.splitlines()[0]) & when_prompt("Mode B")

BRIEF = """## Goal
Build the greeter: a hello.txt that greets the reader.

## Acceptance criteria
- hello.txt exists and says hello
- README.md explains it

## Boundaries
- no web page

## Unknowns and assumptions
- none
"""
GOAL = """## Goal
hello.txt greets the reader and README.md explains it.

## Checks
- hello.txt exists and contains "hello"
- README.md exists
"""
ROUND_ONE = "Round one: hello.txt is written."
ROUND_TWO = "Round two: README.md written too. ALL-DONE"
GAP = "README-MISSING: there is no README.md"


def _submit(fleet: Fleet, run_id: str, *args: str, wait: bool = True) -> Any:
    return fleet.flower(
        "fleet", "submit", "build a greeter", "--shared", "--run-id", run_id, *args, *(["--wait"] if wait else [])
    )


def _manifest(fleet: Fleet, run_id: str) -> list[dict[str, Any]]:
    """The run's manifest rows (every phase's sessions, the judges' too), as the worker recorded them."""
    rows: list[dict[str, Any]] = json.loads((fleet.tmp / "root" / "manifests" / run_id / "manifest.json").read_text())
    return rows


def _ended(fleet: Fleet, run_id: str, *, never_asks: bool = False) -> dict[str, Any] | None:
    """The run's state once it has ended (None while it runs); with ``never_asks``, a question in its state fails
    the test at once (nothing of this run may pause)."""
    state = status_json(fleet, run_id)
    if never_asks:
        assert state["question"] == "", f"the run paused on {state['question']!r}\n{worker_logs(fleet)}"
    return state if state["status"] in ("completed", "failed", "cancelled") else None


def _session_of(request: RecordedRequest) -> str:
    """The session a request came from, as Claude Code names it in the request's metadata ("" if it does not)."""
    body = request.json if isinstance(request.json, dict) else {}
    try:
        said = json.loads((body.get("metadata") or {}).get("user_id") or "{}")
    except ValueError:
        return ""
    return str(said.get("session_id") or "") if isinstance(said, dict) else ""


def _why(fleet: Fleet, run_id: str) -> str:
    """What the worker and the run's harness log said (the reason a continuation did not reach its session)."""
    harness = fleet.tmp / "root" / "manifests" / run_id / "harness.log"
    return f"{worker_logs(fleet)}\n{harness.read_text() if harness.exists() else ''}"


def _tool_result(request: RecordedRequest, tool: str) -> str:
    """The text of the result of the newest ``tool`` call in ``request``'s conversation ("" when none)."""
    ids = {b["id"] for b in request.tool_uses() if b.get("name") == tool}
    texts = [b for b in request.tool_results() if b.get("tool_use_id") in ids]
    if not texts:
        return ""
    content = texts[-1].get("content")
    if isinstance(content, str):
        return content
    return "".join(c.get("text", "") for c in content or [] if isinstance(c, dict))


# --- judged rounds ---------------------------------------------------------------------------------------------


def test_a_not_yet_round_continues_the_same_work_session_with_the_judges_feedback(
    fleet: Fleet, claude_env: ScriptedServer
) -> None:
    run_id = f"go-{uuid.uuid4().hex[:8]}"
    round_two = when(lambda r: GAP in r.last_user_text)
    claude_env.script(
        *keyed(CLARIFIER, Text(BRIEF)),
        *keyed(GOAL_SETTER, Text(GOAL)),
        *keyed(LEAD & ~round_two, Text(ROUND_ONE)),
        *keyed(LEAD & round_two, Text(ROUND_TWO)),
        *keyed(JUDGE & ~when_prompt("Round two"), verdict("not yet", GAP, "README.md exists")),
        *keyed(JUDGE & when_prompt("Round two"), verdict("achieved", "both checks pass")),
    )
    fleet.start_worker("a", "--slots", "1")

    done = _submit(fleet, run_id)
    assert done.returncode == 0, done.stdout + done.stderr + worker_logs(fleet)
    assert done.stdout.startswith(f"{run_id}  completed  go"), done.stdout
    assert claude_env.unscripted == [] and claude_env.rejected == []

    state = status_json(fleet, run_id)
    assert state["steps"] == ["clarify", "goal", "work", "work#round2"]
    assert [o["step"] for o in state["done"]] == ["clarify", "goal", "work", "work#round2"]
    first, second = state["done"][2], state["done"][3]
    assert (first["ok"], first["verdict"]) == (False, "not_yet") and GAP in first["feedback"]
    assert first["error"] == "", "a not-yet round is not an error: the next round takes its feedback"
    assert (second["ok"], second["verdict"], second["output"]) == (True, "achieved", ROUND_TWO)
    # Round two continues the work session of round one: the session derived from the run and "work".
    work = step_session_id(run_id, "work")
    assert first["session_id"] == work and second["session_id"] == work, state["done"]
    assert state["error"] == "" and state["question"] == ""

    lead = [r for r in claude_env.message_requests if LEAD(r)]
    assert len(lead) == 2, [r.last_user_text[:200] for r in lead]
    assert [_session_of(r) for r in lead] == [work, work], "both rounds talk in the one work session"
    assert ROUND_ONE in lead[1].text, "the same conversation goes on"
    assert GAP in lead[1].last_user_text and "README.md exists" in lead[1].last_user_text, "the judge's gaps"
    judges = [r for r in claude_env.message_requests if JUDGE(r)]
    assert len(judges) == 2 and ROUND_TWO in judges[1].first_user_text, "each round's judge sees that round"
    assert ROUND_ONE not in judges[1].text, "the second judge is a fresh session, not the first one's"

    rows = _manifest(fleet, run_id)
    by_step = {r["step"]: r["session_id"] for r in rows}
    assert {"work·judge#1", "work·judge#2"} <= set(by_step), [r["step"] for r in rows]
    assert by_step["work#round2"] == work
    judged = {by_step["work·judge#1"], by_step["work·judge#2"]}
    assert len(judged) == 2 and work not in judged, "each judge is a fresh session of its own"
    logs = fleet.flower("fleet", "logs", run_id).stdout
    assert "work#round2: attempt 1 started" in logs, logs


def test_rounds_that_never_reach_the_goal_fail_the_run_with_the_last_feedback(
    fleet: Fleet, claude_env: ScriptedServer
) -> None:
    run_id = f"go-{uuid.uuid4().hex[:8]}"
    second_gap = "README-STILL-MISSING: README.md is empty"
    round_two = when(lambda r: GAP in r.last_user_text)
    claude_env.script(
        *keyed(CLARIFIER, Text(BRIEF)),
        *keyed(GOAL_SETTER, Text(GOAL)),
        *keyed(LEAD & ~round_two, Text(ROUND_ONE)),
        *keyed(LEAD & round_two, Text("Round two: tried again.")),
        *keyed(JUDGE & ~when_prompt("Round two"), verdict("not yet", GAP, "README.md exists")),
        *keyed(JUDGE & when_prompt("Round two"), verdict("not yet", second_gap, "README.md exists")),
    )
    fleet.start_worker("a", "--slots", "1")

    done = _submit(fleet, run_id, "--rounds", "2")
    assert done.returncode == 1, done.stdout + done.stderr + worker_logs(fleet)
    assert done.stdout.startswith(f"{run_id}  failed  go"), done.stdout
    assert claude_env.unscripted == [] and claude_env.rejected == []

    state = status_json(fleet, run_id)
    assert state["status"] == "failed"
    # Two rounds in all: no third is planned or run.
    assert state["steps"] == ["clarify", "goal", "work", "work#round2"]
    assert [o["step"] for o in state["done"]] == ["clarify", "goal", "work", "work#round2"]
    assert [o["verdict"] for o in state["done"][2:]] == ["not_yet", "not_yet"]
    error = state["error"]
    assert error.startswith("the goal was not reached in 2 judged round(s): "), error
    assert second_gap in error and GAP not in error, "the error carries the last round's feedback"
    shown = fleet.flower("fleet", "status", run_id).stdout
    assert f"  error: {' '.join(error.split())}\n" in shown, shown  # the whole reason, on one line
    assert len([r for r in claude_env.message_requests if LEAD(r)]) == 2
    assert len([r for r in claude_env.message_requests if JUDGE(r)]) == 2


# --- questions that cannot pause -------------------------------------------------------------------------------


def test_a_judges_question_falls_through_at_once_without_pausing_the_round(
    fleet: Fleet, claude_env: ScriptedServer
) -> None:
    run_id = f"go-{uuid.uuid4().hex[:8]}"
    question = "JUDGE-ASKS: may I run the test suite?"
    told = when(lambda r: bool(_tool_result(r, "mcp__human__ask")))
    claude_env.script(
        *keyed(CLARIFIER, Text(BRIEF)),
        *keyed(GOAL_SETTER, Text(GOAL)),
        *keyed(LEAD, Text(ROUND_TWO)),
        *keyed(JUDGE & ~told, ToolUse("mcp__human__ask", {"question": question, "options": ["yes", "no"]})),
        *keyed(JUDGE & told, verdict("achieved", "both checks pass")),
    )
    fleet.start_worker("a", "--slots", "1")

    # The run's question timeout is the default (30 min): a pause would show in `status` and hold the run there.
    submitted = _submit(fleet, run_id, wait=False)
    assert submitted.returncode == 0, submitted.stderr
    state = wait_for(lambda: _ended(fleet, run_id, never_asks=True), 180, f"the run's end\n{worker_logs(fleet)}")
    assert state["status"] == "completed", state
    assert claude_env.unscripted == [] and claude_env.rejected == []

    assert state["answers"] == [] and state["paused_cost_usd"] == 0
    assert [o["step"] for o in state["done"]] == ["clarify", "goal", "work"]
    assert state["done"][2]["session_id"] == step_session_id(run_id, "work")
    # The judge was told go's "nobody answered" at once, in the same judge session that asked.
    judges = [r for r in claude_env.message_requests if JUDGE(r)]
    assert len(judges) == 2, [r.last_user_text[:200] for r in judges]
    assert _tool_result(judges[1], "mcp__human__ask") == TIMEOUT_TEXT
    assert question in judges[1].text
    assert _session_of(judges[0]) == _session_of(judges[1]) != step_session_id(run_id, "work")
    logs = fleet.flower("fleet", "logs", run_id).stdout
    assert "work/2" not in logs, f"no second activity of the work phase: it never paused\n{logs}"
    qa = (fleet.tmp / "root" / "runs" / run_id / ".flower" / "notes" / "qa-log.md").read_text()
    assert question in qa and "[timeout]" in qa, qa


def test_an_unreachable_verdicts_question_falls_through_and_stops_the_run_with_the_reason(
    fleet: Fleet, claude_env: ScriptedServer
) -> None:
    run_id = f"go-{uuid.uuid4().hex[:8]}"
    reason = "NEEDS-A-MAC: the check needs macOS, this is Linux"
    claude_env.script(
        *keyed(CLARIFIER, Text(BRIEF)),
        *keyed(GOAL_SETTER, Text(GOAL)),
        *keyed(LEAD, Text(ROUND_ONE)),
        *keyed(JUDGE, verdict("unreachable", reason, "hello.txt exists")),
    )
    fleet.start_worker("a", "--slots", "1")

    # The gate asks the person whether to accept: it cannot pause (no agent of the phase is running), so it is
    # not answered, and go stops with the judge's reason, as `flower go` does when nobody answers.
    submitted = _submit(fleet, run_id, wait=False)
    assert submitted.returncode == 0, submitted.stderr
    state = wait_for(lambda: _ended(fleet, run_id, never_asks=True), 180, f"the run's end\n{worker_logs(fleet)}")
    assert state["status"] == "failed", state
    assert claude_env.unscripted == [] and claude_env.rejected == []
    assert state["answers"] == []
    assert [o["step"] for o in state["done"]] == ["clarify", "goal", "work"]
    error = state["error"]
    assert error.startswith("work: the judge says the goal is unreachable"), error
    assert reason in error and "nobody answered" in error, error
    assert state["done"][2]["verdict"] == "unreachable"
    assert "work/2" not in fleet.flower("fleet", "logs", run_id).stdout
    qa = (fleet.tmp / "root" / "runs" / run_id / ".flower" / "notes" / "qa-log.md").read_text()
    assert "unreachable" in qa and "[timeout]" in qa, qa


# --- questions that pause --------------------------------------------------------------------------------------


def test_a_coordinators_question_pauses_the_work_phase_and_fleet_answer_continues_its_session(
    fleet: Fleet, claude_env: ScriptedServer
) -> None:
    run_id = f"go-{uuid.uuid4().hex[:8]}"
    question = "LEAD-ASKS: should README.md be in English or in French?"
    answer = "FRENCH-README"
    answered = when(lambda r: answer in r.last_user_text)
    claude_env.script(
        *keyed(CLARIFIER, Text(BRIEF)),
        *keyed(GOAL_SETTER, Text(GOAL)),
        *keyed(LEAD & ~answered, ToolUse("mcp__human__ask", {"question": question, "options": ["en", "fr"]})),
        *keyed(LEAD & answered, Text(ROUND_TWO)),
        *keyed(JUDGE, verdict("achieved", "both checks pass")),
    )
    fleet.start_worker("a", "--slots", "1")

    submitted = _submit(fleet, run_id, wait=False)
    assert submitted.returncode == 0, submitted.stderr

    # The work phase paused: the question is in the run's state and no activity of the run is in flight.
    def asking() -> dict[str, Any] | None:
        state = status_json(fleet, run_id)
        return state if state["question"] == question and not state["running"] else None

    paused = wait_for(asking, 180, f"the coordinator's question in `status`\n{worker_logs(fleet)}")
    assert paused["status"] == "running" and paused["step"] == "work", paused
    assert [o["step"] for o in paused["done"]] == ["clarify", "goal"]
    shown = fleet.flower("fleet", "status", run_id).stdout
    assert f"question: {question}" in shown and "  work: running" in shown, shown

    said = fleet.flower("fleet", "answer", run_id, answer)
    assert said.returncode == 0, said.stderr
    done = _submit(fleet, run_id)
    assert done.returncode == 0, done.stdout + done.stderr + worker_logs(fleet)
    assert done.stdout.startswith(f"{run_id}  completed  go"), done.stdout
    assert claude_env.rejected == []

    state = status_json(fleet, run_id)
    assert state["question"] == "" and state["answers"] == [answer]
    assert [o["step"] for o in state["done"]] == ["clarify", "goal", "work"]
    work = state["done"][2]
    assert work["ok"] is True and work["output"] == ROUND_TWO
    # The work session that asked is the one that goes on: the session derived from the run and "work".
    assert work["session_id"] == step_session_id(run_id, "work"), f"{state['done']}\n{_why(fleet, run_id)}"
    lead = [r for r in claude_env.message_requests if LEAD(r)]
    assert {_session_of(r) for r in lead} == {work["session_id"]}, _why(fleet, run_id)
    resumed = next(r for r in lead if answer in r.last_user_text)
    assert question in resumed.text, "the question is in the continued session's history"
    assert f"You asked: {question}" in resumed.last_user_text and "The person answered:" in resumed.last_user_text
    judge = next(r for r in claude_env.message_requests if JUDGE(r))
    assert ROUND_TWO in judge.first_user_text
    logs = fleet.flower("fleet", "logs", run_id).stdout
    assert "signal answer" in logs and "work/2: attempt 1 started" in logs, logs
    qa = (fleet.tmp / "root" / "runs" / run_id / ".flower" / "notes" / "qa-log.md").read_text()
    assert question in qa and "[answered]" in qa and answer in qa, qa
    # Nothing else was asked of the model: the paused coordinator's Claude Code sent nothing after the pause.
    assert claude_env.unscripted == [], [(LEAD(r), r.last_user_text[:300]) for r in claude_env.unscripted]


def test_a_question_nobody_answers_within_the_timeout_continues_with_gos_timeout_text(
    fleet: Fleet, claude_env: ScriptedServer
) -> None:
    run_id = f"go-{uuid.uuid4().hex[:8]}"
    question = "CLARIFIER-ASKS: English or French?"
    timed_out = when(lambda r: TIMEOUT_TEXT in r.last_user_text)
    claude_env.script(
        *keyed(CLARIFIER & ~timed_out, ToolUse("mcp__human__ask", {"question": question, "options": ["en", "fr"]})),
        *keyed(CLARIFIER & timed_out, Text(BRIEF)),
        *keyed(GOAL_SETTER, Text(GOAL)),
        *keyed(LEAD, Text(ROUND_TWO)),
        *keyed(JUDGE, verdict("achieved", "both checks pass")),
    )
    fleet.start_worker("a", "--slots", "1")

    started = time.monotonic()
    done = _submit(fleet, run_id, "--timeout", "3")
    assert done.returncode == 0, done.stdout + done.stderr + worker_logs(fleet)
    assert done.stdout.startswith(f"{run_id}  completed  go"), done.stdout
    assert claude_env.rejected == []

    state = status_json(fleet, run_id)
    assert state["question"] == "" and state["answers"] == [], "nobody answered"
    assert [o["step"] for o in state["done"]] == ["clarify", "goal", "work"]
    assert all(o["ok"] for o in state["done"])
    # The clarifier that asked goes on in its own session, told go's timeout text.
    clarify = step_session_id(run_id, "clarify")
    assert state["done"][0]["session_id"] == clarify, f"{state['done']}\n{_why(fleet, run_id)}"
    clarifier = [r for r in claude_env.message_requests if CLARIFIER(r)]
    assert {_session_of(r) for r in clarifier} == {clarify}, _why(fleet, run_id)
    asked = next(r for r in clarifier if not timed_out(r))
    resumed = next(r for r in clarifier if timed_out(r))
    assert f"You asked: {question}" in resumed.last_user_text
    assert question in resumed.text and resumed.received_at - asked.received_at >= 3.0, "it waited the timeout"
    assert time.monotonic() - started >= 3.0
    logs = fleet.flower("fleet", "logs", run_id).stdout
    assert "clarify/2: attempt 1 started" in logs and "signal answer" not in logs, logs
    # The Q&A log, as `flower go` keeps it: the question, and that nobody answered it.
    qa = (fleet.tmp / "root" / "runs" / run_id / ".flower" / "notes" / "qa-log.md").read_text()
    assert question in qa and "[timeout]" in qa, qa
    # Nothing else was asked of the model: the paused clarifier's Claude Code sent nothing after the pause.
    assert claude_env.unscripted == [], [(CLARIFIER(r), r.last_user_text[:300]) for r in claude_env.unscripted]
