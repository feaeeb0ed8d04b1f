"""flower-fleet end to end: a real Temporal dev server, a real PostgreSQL, the real Claude Code binary against
the scripted Messages API, and `flower fleet` worker and client processes."""

from __future__ import annotations

import json
import signal
import time
import uuid
from pathlib import Path

import pytest
from fleet_helpers import (
    FLOWS_ONE_STEP,
    Fleet,
    bare_remote,
    cancel_took,
    flows_one_step,
    kill_machine,
    most_at_once,
    remote_git,
    status_json,
    stored_entries,
    wait_for,
)

from flower_fleet import step_session_id
from harness import ScriptedServer, Step, Text, bash, keyed, when, when_prompt

pytestmark = pytest.mark.e2e


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

    # ... and so are the run's manifest rows and lineage: `flower analyze --run` reads them from the store.
    analyzed = fleet.flower("--store", fleet.store, "--json", "analyze", "--run", run_id, name="reader")
    assert analyzed.returncode == 0, analyzed.stderr
    assert sid in analyzed.stdout and "hello" in analyzed.stdout

    # Submitting the same id again starts nothing: the run is not run twice.
    again = fleet.flower("fleet", "submit", "flows.py:main", "--shared", "--run-id", run_id, "--wait")
    assert again.returncode == 0, again.stderr
    assert len(claude_env.message_requests) == 1, "one model request: the resubmission ran nothing"


def test_three_runs_on_two_single_slot_workers_complete_never_more_than_two_at_once(
    fleet: Fleet, claude_env: ScriptedServer
) -> None:
    spans = fleet.tmp / "spans.log"  # each step's bash appends "start"/"end" with a clock: the overlap, measured
    runs = [f"run-{i}-{uuid.uuid4().hex[:6]}" for i in range(3)]
    for run_id in runs:
        fleet.workspace(run_id, flows_one_step(f"TASK {run_id}"))
        command = f"echo start {run_id} $(date +%s.%N) >> {spans}; sleep 6; echo end {run_id} $(date +%s.%N) >> {spans}"
        claude_env.script(keyed(when_prompt(f"TASK {run_id}"), bash(command), Text(f"DONE {run_id}")))
    fleet.start_worker("a", "--slots", "1")
    fleet.start_worker("b", "--slots", "1")

    # Submitted at once (three client processes), so all three wait for the two slots together.
    submits = [fleet.start_flower("fleet", "submit", "flows.py:main", "--shared", "--run-id", r) for r in runs]
    for run_id, submit in zip(runs, submits):
        out, err = submit.communicate(timeout=120)
        assert submit.returncode == 0 and out.strip() == run_id, err
    for run_id in runs:
        done = fleet.flower("fleet", "submit", "flows.py:main", "--shared", "--run-id", run_id, "--wait")
        assert done.returncode == 0, done.stdout + done.stderr
        assert f"{run_id}  completed" in done.stdout

    events, most = most_at_once(spans)
    assert events == 6, spans.read_text()
    assert most <= 2, f"{most} steps ran at once on two single-slot workers"
    workers = {status_json(fleet, r)["done"][0]["worker"] for r in runs}
    assert len(workers) == 2, f"both workers took steps: {workers}"


@pytest.mark.parametrize("how", ["SIGKILL", "SIGTERM"])
def test_a_step_whose_worker_is_killed_resumes_the_same_session_on_the_other_worker(
    fleet: Fleet, claude_env: ScriptedServer, how: str
) -> None:
    """SIGKILL of the worker's process group is a dead machine (noticed at the heartbeat timeout); SIGTERM is a
    worker told to stop: it stops polling and hands the running step back at once."""
    run_id = f"run-{uuid.uuid4().hex[:8]}"
    fleet.workspace(run_id, flows_one_step(f"TASK {run_id}"))
    claude_env.script(
        bash("echo FIRST-TURN > first.txt"),
        bash("python3 -c 'import time; time.sleep(120)'"),  # the turn during which its machine dies
        Text("FINISHED AFTER THE TAKEOVER"),
    )
    fleet.start_worker("a", "--slots", "1")
    fleet.start_worker("b", "--slots", "1")
    heartbeat_timeout = 5.0
    sent = fleet.flower(
        "fleet", "submit", "flows.py:main", "--shared", "--run-id", run_id,
        "--heartbeat-timeout", str(heartbeat_timeout),
    )  # fmt: skip
    assert sent.returncode == 0, sent.stderr

    # Mid-turn: the second reply (the long command) has been sent, and the step is held by a worker.
    wait_for(lambda: len(claude_env.message_requests) >= 2, 120, "the step's second model request")
    wait_for(lambda: (fleet.tmp / "root" / "runs" / run_id / "first.txt").exists(), 60, "the first turn's file")
    held = wait_for(lambda: status_json(fleet, run_id)["running"], 60, "the step shows as running on a worker")
    doomed = fleet.worker_by_identity(held[0]["worker"])
    before = len(claude_env.message_requests)
    if how == "SIGKILL":
        kill_machine(doomed)
    else:
        doomed.send_signal(signal.SIGTERM)
    killed_at = time.monotonic()

    wait_for(lambda: len(claude_env.message_requests) > before, heartbeat_timeout + 60, "the other worker's request")
    pickup = time.monotonic() - killed_at
    print(f"pickup after {how}: {pickup:.1f} s (heartbeat timeout {heartbeat_timeout:.0f} s)")
    assert pickup <= heartbeat_timeout + 10, f"picked up {pickup:.1f} s after the kill"
    resumed = claude_env.message_requests[before]
    assert "FIRST-TURN" in resumed.text, "the resumed request carries the earlier turns"
    assert "This step was interrupted" in resumed.text

    done = fleet.flower("fleet", "submit", "flows.py:main", "--shared", "--run-id", run_id, "--wait")
    assert done.returncode == 0, done.stdout + done.stderr
    state = status_json(fleet, run_id)
    [step] = state["done"]
    assert step["ok"] is True and step["output"] == "FINISHED AFTER THE TAKEOVER"
    assert step["attempt"] == 2 and step["worker"] != held[0]["worker"]
    assert step["session_id"] == step_session_id(run_id, "work"), "the id derived from the run and the step"
    listed = fleet.flower("-w", str(fleet.tmp / "root" / "runs" / run_id), "sessions", name="reader")
    assert listed.stdout.split()[0] == step["session_id"] and len(listed.stdout.strip().splitlines()) == 1, (
        "one session: the takeover continued it, it did not start another"
    )
    logs = fleet.flower("fleet", "logs", run_id)
    assert "attempt 2 started on" in logs.stdout, logs.stdout
    if how == "SIGTERM":
        assert doomed.wait(timeout=60) == 0, "a worker told to stop exits cleanly once it has handed its step back"


def test_cancel_stops_the_running_step_within_the_heartbeat_interval_and_status_says_so(
    fleet: Fleet, claude_env: ScriptedServer
) -> None:
    run_id = f"run-{uuid.uuid4().hex[:8]}"
    fleet.workspace(run_id, flows_one_step(f"TASK {run_id}"))
    claude_env.script(bash("python3 -c 'import time; time.sleep(120)'"), Text("NEVER SENT"))
    fleet.start_worker("a", "--slots", "1")  # heartbeats every second (fleet_helpers)
    sent = fleet.flower("fleet", "submit", "flows.py:main", "--shared", "--run-id", run_id)
    assert sent.returncode == 0, sent.stderr
    wait_for(lambda: len(claude_env.message_requests) >= 1, 120, "the step's first model request")
    wait_for(lambda: status_json(fleet, run_id)["running"], 60, "the step is running")

    asked = time.time()  # before the cancel command starts: what it took includes its start-up (~3 s here)
    cancelled = fleet.flower("fleet", "cancel", run_id)
    assert cancelled.returncode == 0, cancelled.stderr
    state = wait_for(
        lambda: (s := status_json(fleet, run_id))["status"] == "cancelled" and s, 60, "status says cancelled"
    )
    assert state["done"][-1]["step"] == "work" and state["done"][-1]["error"] == "cancelled"
    # The step is recorded where the worker ran it: the manifest row of an interrupted step, and when it ended.
    manifest = fleet.tmp / "root" / "manifests" / run_id / "manifest.json"
    [row] = json.loads(manifest.read_text())
    assert row["step"] == "work" and row["ok"] is False and row["error"], row
    took = cancel_took(fleet, run_id, row, asked)
    # Within a heartbeat (1 s) the step hears it; the runner is halted, so Claude Code is interrupted in the middle
    # of its Bash call (~1 s to end) instead of finishing its turn while the SDK waits 5 s to close it. The
    # server's record is in whole seconds (+1 s), and a loaded machine gets 3 s more.
    assert took <= 1 + 1 + 1 + 3, f"the cancel took {took:.1f} s to stop the step"
    logs = fleet.flower("fleet", "logs", run_id)
    assert "work: cancel requested" in logs.stdout and "run cancelled" in logs.stdout, logs.stdout


def test_the_temporal_server_killed_and_restarted_mid_step_the_run_completes(
    claude_env: ScriptedServer, pg_url: str, tmp_path: Path
) -> None:
    from temporal_server import TemporalServer, TemporalServerError

    try:
        server = TemporalServer.start()  # its own, not the session's: this test kills it
    except TemporalServerError as exc:
        pytest.skip(str(exc))
    fleet = Fleet(tmp_path, server.address, pg_url)
    try:
        run_id = f"run-{uuid.uuid4().hex[:8]}"
        fleet.workspace(run_id, flows_one_step(f"TASK {run_id}"))
        claude_env.script(bash("python3 -c 'import time; time.sleep(8)'"), Text("DONE DESPITE THE RESTART"))
        fleet.start_worker("a", "--slots", "1")
        sent = fleet.flower("fleet", "submit", "flows.py:main", "--shared", "--run-id", run_id)
        assert sent.returncode == 0, sent.stderr
        wait_for(lambda: len(claude_env.message_requests) >= 1, 120, "the step's first model request")
        assert len(claude_env.message_requests) == 1, "the step is in its 8 s tool call: mid-step"

        server.restart()  # SIGKILL, then the same port and db file: the run's history survives

        done = fleet.flower("fleet", "submit", "flows.py:main", "--shared", "--run-id", run_id, "--wait")
        assert done.returncode == 0, done.stdout + done.stderr + (tmp_path / "worker-a.log").read_text()
        state = status_json(fleet, run_id)
        assert state["status"] == "completed"
        assert state["done"][0]["output"] == "DONE DESPITE THE RESTART"
    finally:
        fleet.stop()
        server.stop()


def test_a_worker_whose_heartbeats_stall_is_superseded_and_its_late_appends_are_refused(
    fleet: Fleet, claude_env: ScriptedServer, pg_url: str
) -> None:
    run_id = f"run-{uuid.uuid4().hex[:8]}"
    ws = fleet.workspace(run_id, flows_one_step(f"TASK {run_id}"))
    resumed = when(lambda r: "This step was interrupted" in r.text, "the takeover's request")
    claude_env.script(
        bash("python3 -c 'import time; time.sleep(15)'"),
        Step(Text("DONE BY THE TAKEOVER"), resumed),
        Step(Text("LATE-FROM-THE-STALLED-WORKER"), ~resumed),
    )
    fleet.start_worker("a", "--slots", "1")
    fleet.start_worker("b", "--slots", "1")
    sent = fleet.flower(
        "fleet", "submit", "flows.py:main", "--shared", "--run-id", run_id, "--heartbeat-timeout", "5"
    )  # fmt: skip
    assert sent.returncode == 0, sent.stderr
    wait_for(lambda: len(claude_env.message_requests) >= 1, 120, "the step's first model request")
    held = wait_for(lambda: status_json(fleet, run_id)["running"], 60, "the step is running on a worker")
    stalled = fleet.worker_by_identity(held[0]["worker"])
    stalled.send_signal(signal.SIGSTOP)  # alive, its Claude Code still working, but no heartbeat, no renewal
    try:
        done = fleet.flower("fleet", "submit", "flows.py:main", "--shared", "--run-id", run_id, "--wait")
        assert done.returncode == 0, done.stdout + done.stderr
    finally:
        stalled.send_signal(signal.SIGCONT)
    # The stalled worker wakes up still driving its step: its lease renewal finds the takeover and the step ends
    # "taken over" (whatever its harness produced meanwhile reaches the store only through the fenced view).
    manifest = fleet.tmp / "root" / "manifests" / run_id / "manifest.json"
    wait_for(
        lambda: any("taken over" in (r.get("error") or "") for r in json.loads(manifest.read_text())),
        60,
        "the stalled worker records its step as taken over",
    )
    state = status_json(fleet, run_id)
    [step] = state["done"]
    assert step["output"] == "DONE BY THE TAKEOVER" and step["attempt"] >= 2
    entries = json.dumps(stored_entries(pg_url, ws, step["session_id"]))
    assert "DONE BY THE TAKEOVER" in entries
    assert "LATE-FROM-THE-STALLED-WORKER" not in entries, "the superseded attempt appended after the takeover"


def test_a_run_from_a_git_remote_is_cloned_into_the_fleet_root_and_its_step_end_is_checkpointed(
    fleet: Fleet, claude_env: ScriptedServer
) -> None:
    run_id = f"run-{uuid.uuid4().hex[:8]}"
    remote = bare_remote(fleet.tmp, {"main": {"flows.py": flows_one_step(f"TASK {run_id}")}})
    claude_env.script(bash("echo MADE-BY-THE-STEP > made.txt"), Text("DONE FROM THE REMOTE"))
    fleet.start_worker("a", "--slots", "1")

    done = fleet.flower(
        "fleet", "submit", "flows.py:main", "--repo", str(remote), "--branch", "main", "--run-id", run_id, "--wait"
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr + (fleet.tmp / "worker-a.log").read_text()
    assert (fleet.tmp / "root" / "runs" / run_id / "flows.py").is_file(), (
        "the workspace is a clone under the fleet root"
    )
    pushed = remote_git(remote, "show", f"flower/{run_id}:made.txt")
    assert pushed.returncode == 0 and pushed.stdout == "MADE-BY-THE-STEP\n", pushed.stderr
    [step] = status_json(fleet, run_id)["done"]
    head = remote_git(remote, "rev-parse", f"flower/{run_id}")
    assert step["checkpoint"] == head.stdout.strip(), "the step-end checkpoint is the branch's head"
    assert step["restored_from"] == "", "a fresh clone was not restored from a checkpoint"
