"""flower-fleet end to end: a real Temporal dev server, a real PostgreSQL, the real Claude Code binary against
the scripted Messages API, and `flower fleet` worker and client processes."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from fleet_helpers import FLOWS_ONE_STEP, Fleet, status_json

from harness import ScriptedServer, Text

pytestmark = pytest.mark.e2e


@pytest.fixture
def fleet(claude_env: ScriptedServer, temporal_address: str, pg_url: str, tmp_path: Path) -> Iterator[Fleet]:
    made = Fleet(tmp_path, temporal_address, pg_url)
    try:
        yield made
    finally:
        made.stop()


def test_a_submitted_one_step_workflow_completes_on_a_worker_and_its_session_is_in_postgres(
    fleet: Fleet, claude_env: ScriptedServer
) -> None:
    run_id = f"run-{uuid.uuid4().hex[:8]}"
    ws = fleet.workspace(run_id, FLOWS_ONE_STEP)
    claude_env.script(Text("HELLO-FROM-THE-FLEET"))
    worker = fleet.start_worker("a", "--slots", "1")

    done = fleet.flower("fleet", "submit", "flows.py:main", "--shared", "--run-id", run_id, "--wait")
    assert done.returncode == 0, done.stderr + (fleet.tmp / "worker-a.log").read_text()
    assert done.stdout.startswith(f"{run_id}  completed  one-step"), done.stdout
    assert worker.poll() is None, "the worker keeps polling after the run"

    state = status_json(fleet, run_id)
    [step] = state["done"]
    assert step["ok"] is True and step["output"] == "HELLO-FROM-THE-FLEET"
    sid = step["session_id"]
    assert sid

    # Another process, another HOME: the session is in the PostgreSQL store, under the run's workspace.
    listed = fleet.flower("-w", str(ws), "sessions", name="reader")
    assert listed.returncode == 0, listed.stderr
    assert sid in listed.stdout

    # Submitting the same id again starts nothing: the run is not run twice.
    again = fleet.flower("fleet", "submit", "flows.py:main", "--shared", "--run-id", run_id, "--wait")
    assert again.returncode == 0, again.stderr
    assert len(claude_env.message_requests) == 1, "one model request: the resubmission ran nothing"
