"""flower-fleet's go runs end to end: `flower fleet submit "ASK"` on a real Temporal dev server, a real
PostgreSQL, the real Claude Code binary against ONE scripted Messages API that plays the clarifier, the
goal-setter, the coordinator and the judge (each reply picked by the role's system prompt, as in
tests/e2e/test_go_e2e.py), and a clarifier's question answered with `flower fleet answer`."""

from __future__ import annotations

import uuid

import pytest
from fleet_helpers import (
    ANSWER,
    BRIEF,
    CLARIFIER,
    FLOWS_ONE_STEP,
    GOAL,
    GOAL_SETTER,
    JUDGE,
    LEAD,
    QUESTION,
    Fleet,
    status_json,
    verdict,
    wait_for,
    worker_logs,
)

from flower_fleet import step_session_id
from harness import ScriptedServer, Text, ToolUse, keyed, when, when_prompt

pytestmark = pytest.mark.e2e


def test_a_go_ask_completes_clarify_goal_and_a_judged_round(fleet: Fleet, claude_env: ScriptedServer) -> None:
    run_id = f"go-{uuid.uuid4().hex[:8]}"
    claude_env.script(
        *keyed(CLARIFIER, Text(BRIEF)),
        *keyed(GOAL_SETTER, Text(GOAL)),
        *keyed(LEAD, Text("Round one: hello.txt is written. ALL-DONE")),
        *keyed(JUDGE, verdict("achieved", "the check passes")),
    )
    fleet.start_worker("a", "--slots", "1")

    done = fleet.flower("fleet", "submit", "build a greeter", "--shared", "--run-id", run_id, "--wait")
    assert done.returncode == 0, done.stderr + worker_logs(fleet)
    assert done.stdout.startswith(f"{run_id}  completed  go"), done.stdout
    assert claude_env.unscripted == [] and claude_env.rejected == []

    state = status_json(fleet, run_id)
    assert [o["step"] for o in state["done"]] == ["clarify", "goal", "work"]
    assert all(o["ok"] for o in state["done"])
    work = state["done"][-1]
    assert work["verdict"] == "achieved" and work["output"] == "Round one: hello.txt is written. ALL-DONE"
    # Each phase's session id is derived from the run id and its label: any retry resumes the same session.
    assert [o["session_id"] for o in state["done"]] == [
        step_session_id(run_id, label) for label in ("clarify", "goal", "work")
    ]
    # The brief and the goal are go's own notes, in the run's workspace.
    notes = fleet.tmp / "root" / "runs" / run_id / ".flower" / "notes"
    assert "Build the greeter" in (notes / "brief.md").read_text()
    assert "hello.txt greets the reader" in (notes / "goal.md").read_text()
    judge = next(r for r in claude_env.message_requests if JUDGE(r))
    assert "Round one: hello.txt is written." in judge.first_user_text, "the judge sees the round's answer"
    assert 'contains "hello"' in judge.first_user_text, "the judge is given the goal read from the notes"


def test_a_clarifier_question_waits_holding_no_slot_and_fleet_answer_reaches_it(
    fleet: Fleet, claude_env: ScriptedServer
) -> None:
    run_id = f"go-{uuid.uuid4().hex[:8]}"
    other = f"run-{uuid.uuid4().hex[:8]}"
    fleet.workspace(other, FLOWS_ONE_STEP)
    answered = when(lambda r: ANSWER in r.last_user_text)
    claude_env.script(
        *keyed(CLARIFIER & ~answered, ToolUse("mcp__human__ask", {"question": QUESTION, "options": ["en", "fr"]})),
        *keyed(CLARIFIER & answered, Text(BRIEF)),
        *keyed(GOAL_SETTER, Text(GOAL)),
        *keyed(LEAD, Text("Bonjour written. ALL-DONE")),
        *keyed(JUDGE, verdict("achieved", "the check passes")),
        *keyed(when_prompt("say hello"), Text("HELLO-MEANWHILE")),
    )
    fleet.start_worker("a", "--slots", "1")

    submitted = fleet.flower("fleet", "submit", "build a greeter", "--shared", "--run-id", run_id)
    assert submitted.returncode == 0, submitted.stderr

    # The question is in the run's state, and no activity of the run is in flight: the wait holds no slot.
    def asking() -> bool:
        state = status_json(fleet, run_id)
        return state["question"] == QUESTION and not state["running"]

    wait_for(asking, 180, f"the question in `status`\n{worker_logs(fleet)}")
    shown = fleet.flower("fleet", "status", run_id)
    assert f"question: {QUESTION}" in shown.stdout, shown.stdout

    # Meanwhile a second run completes on the same single-slot worker.
    meanwhile = fleet.flower("fleet", "submit", "flows.py:main", "--shared", "--run-id", other, "--wait")
    assert meanwhile.returncode == 0, meanwhile.stderr + worker_logs(fleet)
    assert status_json(fleet, run_id)["question"] == QUESTION, "still waiting for the person"

    answer = fleet.flower("fleet", "answer", run_id, ANSWER)
    assert answer.returncode == 0, answer.stderr
    done = fleet.flower("fleet", "submit", "build a greeter", "--shared", "--run-id", run_id, "--wait")
    assert done.returncode == 0, done.stdout + done.stderr + worker_logs(fleet)
    assert done.stdout.startswith(f"{run_id}  completed  go"), done.stdout
    # The pause interrupts the clarifier's Claude Code: it asks the model nothing more after the question.
    assert claude_env.unscripted == [] and claude_env.rejected == []
    after_question = [r for r in claude_env.message_requests if CLARIFIER(r) and QUESTION in r.text]
    assert after_question and all(ANSWER in r.last_user_text for r in after_question[:1]), (
        "the first clarifier request after the question is the one that carries the answer"
    )

    # The clarifier's next request carries the answer, in the same session that asked.
    clarifier = [r for r in claude_env.message_requests if CLARIFIER(r)]
    resumed = next(r for r in clarifier if ANSWER in r.last_user_text)
    assert QUESTION in resumed.text, "the session that asked goes on (the question is in its history)"
    state = status_json(fleet, run_id)
    assert state["question"] == "" and state["answers"] == [ANSWER]
    assert [o["step"] for o in state["done"]] == ["clarify", "goal", "work"]
    # The question's session is continued, not succeeded: the phase ends in the id derived from its label.
    assert state["done"][0]["session_id"] == step_session_id(run_id, "clarify")
    assert state["done"][0]["ok"] is True
    logs = fleet.flower("fleet", "logs", run_id)
    assert "signal answer" in logs.stdout and "clarify/2: attempt 1 started" in logs.stdout, logs.stdout
