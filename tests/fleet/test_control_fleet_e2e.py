"""The control verbs on a fleet run (``FLOWER_TEMPORAL`` set): `flower status` lists the fleet's go run with the
question it waits on, `flower answer` answers it through the fleet's signal, `flower stop` cancels another one —
a real Temporal dev server, PostgreSQL, the real Claude Code binary against the scripted server."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from fleet_helpers import (
    ANSWER,
    BRIEF,
    CLARIFIER,
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

from harness import ScriptedServer, Text, ToolUse, keyed, when

pytestmark = pytest.mark.e2e


def _fleet_run(fleet: Fleet, run_id: str) -> dict[str, Any] | None:
    done = fleet.flower("--json", "status")
    assert done.returncode == 0, done.stderr
    return next((r for r in json.loads(done.stdout)["runs"] if r["run_id"] == run_id and r["fleet"]), None)


def test_status_shows_a_fleet_runs_question_and_answer_reaches_it_through_the_signal(
    fleet: Fleet, claude_env: ScriptedServer
) -> None:
    run_id = f"go-{uuid.uuid4().hex[:8]}"
    answered = when(lambda r: ANSWER in r.last_user_text)
    claude_env.script(
        *keyed(CLARIFIER & ~answered, ToolUse("mcp__human__ask", {"question": QUESTION, "options": ["en", "fr"]})),
        *keyed(CLARIFIER & answered, Text(BRIEF)),
        *keyed(GOAL_SETTER, Text(GOAL)),
        *keyed(LEAD, Text("Bonjour written. ALL-DONE")),
        *keyed(JUDGE, verdict("achieved", "the check passes")),
    )
    fleet.start_worker("a", "--slots", "1")
    submitted = fleet.flower("fleet", "submit", "build a greeter", "--shared", "--run-id", run_id)
    assert submitted.returncode == 0, submitted.stderr

    waiting = wait_for(
        lambda: (r := _fleet_run(fleet, run_id)) and r["state"] == "waiting" and r,
        180,
        f"the fleet run waiting in `flower status`\n{worker_logs(fleet)}",
    )
    assert waiting["question"] == QUESTION and waiting["accepts"] == ["answer", "stop"]
    shown = fleet.flower("status")
    assert f"{run_id} (fleet)" in shown.stdout and QUESTION in shown.stdout, shown.stdout

    mail = fleet.flower("mail", run_id, "also CSV")
    assert mail.returncode == 2 and "not mail" in mail.stderr
    answer = fleet.flower("--json", "answer", run_id, ANSWER)
    assert answer.returncode == 0, answer.stderr
    assert json.loads(answer.stdout.splitlines()[-1])["ok"] is True

    done = fleet.flower("fleet", "submit", "build a greeter", "--shared", "--run-id", run_id, "--wait")
    assert done.returncode == 0, done.stdout + done.stderr + worker_logs(fleet)
    assert status_json(fleet, run_id)["answers"] == [ANSWER]
    final = _fleet_run(fleet, run_id)
    assert final is not None and final["state"] == "done" and final["ok"] is True
