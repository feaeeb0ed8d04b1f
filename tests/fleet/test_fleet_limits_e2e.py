"""A usage limit in the fleet: the step's activity ends "limited until T", the workflow waits for the reset on a
durable timer holding no worker slot (a second run's step runs meanwhile on the single-slot worker), then runs
the step again, which continues the same session."""

from __future__ import annotations

import time
import uuid

import pytest
from fleet_helpers import Fleet, flows_one_step, status_json, wait_for

from harness import RecordedRequest, ScriptedServer, Text, bash, keyed, usage_limited, when_prompt

pytestmark = pytest.mark.e2e

WINDOW_S = 90  # long enough for the second run's step to start inside it on the one slot, on a loaded machine


def wall_time(request: RecordedRequest) -> float:
    return request.received_at + (time.time() - time.monotonic())


def test_a_limited_step_holds_no_slot_while_it_waits_and_resumes_the_same_session(
    fleet: Fleet, claude_env: ScriptedServer
) -> None:
    api = claude_env
    limited, other = (f"run-{name}-{uuid.uuid4().hex[:6]}" for name in ("limited", "other"))
    for run_id in (limited, other):
        fleet.workspace(run_id, flows_one_step(f"TASK {run_id}"))
    api.script(
        # Keyed: the limit is the first run's account's; the second run's requests are served.
        keyed(when_prompt(f"TASK {limited}"), bash("echo FIRST-TURN"), usage_limited(WINDOW_S), Text("LIMITED DONE")),
        keyed(when_prompt(f"TASK {other}"), Text("OTHER DONE")),
    )
    fleet.start_worker("a", "--slots", "1")
    sent = fleet.flower("fleet", "submit", "flows.py:main", "--shared", "--run-id", limited)
    assert sent.returncode == 0, sent.stderr

    waiting = wait_for(lambda: status_json(fleet, limited).get("limited_until"), 120, "the step limited until T")
    # The single slot is free: the other run's step runs now, while the limit holds.
    assert api.limit_ends is not None and time.time() < api.limit_ends
    other_submit = fleet.start_flower("fleet", "submit", "flows.py:main", "--shared", "--run-id", other, "--wait")
    assert waiting == pytest.approx(api.limit_ends, abs=2)
    shown = fleet.flower("fleet", "status", limited)
    assert "limited until" in shown.stdout, shown.stdout
    assert status_json(fleet, limited)["running"] == [], "no activity (no slot) while the limit holds"
    out, err = other_submit.communicate(timeout=240)
    assert other_submit.returncode == 0, out + err
    other_request = next(r for r in api.message_requests if f"TASK {other}" in r.first_user_text)
    print(f"the other run's request came {api.limit_ends - wall_time(other_request):.1f} s before the reset")

    done = fleet.flower("fleet", "submit", "flows.py:main", "--shared", "--run-id", limited, "--wait")
    assert done.returncode == 0, done.stdout + done.stderr + fleet.logs()
    assert len(api.limited) == 1, "one refused request: the harness's first; none while the workflow waited"
    mine = [r for r in api.message_requests if f"TASK {limited}" in r.first_user_text and r.status == 200]
    resumed = mine[-1]
    assert wall_time(other_request) < wall_time(resumed), "the other run's step ran before the limited one went on"
    assert 0 <= wall_time(resumed) - api.limit_ends <= 15, "scheduled again at the reset (plus a worker's start)"
    assert "FIRST-TURN" in resumed.text, "the same session goes on"
    state = status_json(fleet, limited)
    [step] = state["done"]
    assert step["ok"] is True and step["output"] == "LIMITED DONE" and state["limited_until"] is None
