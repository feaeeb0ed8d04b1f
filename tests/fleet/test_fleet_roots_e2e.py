"""flower-fleet end to end with two machines: two worker processes, each with a fleet root of its own, and one
bare git repository as the runs' remote — the workspace moves with the step through checkpoints, not through a
shared disk. (tests/fleet/test_fleet_e2e.py runs the same scenarios on one shared root, ``--shared``.)

Two machines are emulated on one honestly: each worker runs in a mount namespace of its own where its own root
directory is bind-mounted at the one common ``FLOWER_FLEET_ROOT`` path, so both see the same workspace path (the
SDK keys sessions by it, as two machines with the same fleet root would) and different files. Where unshare or
mount is not permitted the tests are skipped with the reason; under CI that is a failure.
"""

from __future__ import annotations

import json
import signal
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
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
    bare_remote,
    cancel_took,
    files_under,
    flows_one_step,
    kill_machine,
    most_at_once,
    remote_git,
    require_own_roots,
    status_json,
    stored_entries,
    verdict,
    wait_for,
)

from flower_fleet import step_session_id
from harness import ScriptedServer, Step, Text, ToolUse, bash, keyed, when, when_prompt

pytestmark = pytest.mark.e2e


@pytest.fixture
def fleet(fleet: Fleet) -> Fleet:
    """The conftest's fleet, where workers can have fleet roots of their own (else the test skips or fails)."""
    require_own_roots(fleet.tmp)
    return fleet


def _one_remote(fleet: Fleet, run_id: str) -> Path:
    """The bare remote of a one-step run: its flows.py on ``main``, the step asked ``TASK <run id>``."""
    return bare_remote(fleet.tmp, {"main": {"flows.py": flows_one_step(f"TASK {run_id}")}})


def _submit(fleet: Fleet, remote: Path, run_id: str, *args: str, branch: str = "main") -> Any:
    return fleet.flower(
        "fleet", "submit", "flows.py:main", "--repo", str(remote), "--branch", branch, "--run-id", run_id, *args
    )  # fmt: skip


def _manifest(fleet: Fleet, machine: str, run_id: str) -> list[dict[str, Any]]:
    """The manifest rows machine ``machine`` wrote for the run ([] before its first)."""
    path = fleet.own_root(machine) / "manifests" / run_id / "manifest.json"
    rows: list[dict[str, Any]] = json.loads(path.read_text()) if path.is_file() else []
    return rows


def test_a_sigkilled_workers_step_resumes_on_another_machine_from_the_last_checkpoint(
    fleet: Fleet, claude_env: ScriptedServer, pg_url: str
) -> None:
    run_id = f"run-{uuid.uuid4().hex[:8]}"
    remote = _one_remote(fleet, run_id)
    common = fleet.tmp / "root"  # FLOWER_FLEET_ROOT on both machines; in this namespace, an empty mount point
    roots = {"a": fleet.own_root("a"), "b": fleet.own_root("b")}
    claude_env.script(
        bash("echo FIRST-TURN > first.txt"),
        # The turn during which its machine dies: a file no checkpoint holds (.gitignore), then a long command.
        bash("echo DEAD-ATTEMPT > scratch-dead.txt; python3 -c 'import time; time.sleep(120)'"),
        bash("cat first.txt > second.txt; echo SECOND-TURN >> second.txt"),  # the takeover's first reply
        Text("FINISHED AFTER THE TAKEOVER"),
    )
    # Checkpoints every 2 s while the step runs, so one holding first.txt is pushed mid-turn.
    workers = {name: fleet.start_machine(name, "--slots", "1", "--checkpoint-every", "2") for name in ("a", "b")}
    heartbeat_timeout = 5.0
    sent = _submit(fleet, remote, run_id, "--heartbeat-timeout", str(heartbeat_timeout))
    assert sent.returncode == 0, sent.stderr

    # Mid-turn: the long command's reply was sent, and a checkpoint holding the first turn's file was pushed.
    wait_for(lambda: len(claude_env.message_requests) >= 2, 120, "the step's second model request")
    held = wait_for(lambda: status_json(fleet, run_id)["running"], 60, "the step shows as running on a worker")
    doomed = fleet.worker_by_identity(held[0]["worker"])
    dead, alive = ("a", "b") if doomed is workers["a"] else ("b", "a")
    wait_for(
        lambda: (roots[dead] / "runs" / run_id / "scratch-dead.txt").exists(), 60, "the dead attempt's second turn"
    )
    wait_for(
        lambda: remote_git(remote, "show", f"flower/{run_id}:first.txt").stdout == "FIRST-TURN\n",
        60,
        "a periodic checkpoint with first.txt on the remote",
    )
    before = len(claude_env.message_requests)
    kill_machine(doomed)
    killed_at = time.monotonic()
    # Nothing pushes now: the dead machine's git died with it, and the other takes the step only after the
    # heartbeat timeout. So this is the checkpoint the takeover must restore.
    last = remote_git(remote, "rev-parse", f"flower/{run_id}").stdout.strip()
    last_at = datetime.fromtimestamp(int(remote_git(remote, "show", "-s", "--format=%ct", last).stdout), UTC)
    sid = step_session_id(run_id, "work")
    ws = common / "runs" / run_id
    at_kill = stored_entries(pg_url, ws, sid)
    assert at_kill, "the dead attempt's turns are in the store"

    wait_for(lambda: len(claude_env.message_requests) > before, heartbeat_timeout + 60, "the other worker's request")
    pickup = time.monotonic() - killed_at
    print(f"pickup after SIGKILL, separate roots: {pickup:.1f} s (heartbeat timeout {heartbeat_timeout:.0f} s)")
    assert pickup <= heartbeat_timeout + 10, f"picked up {pickup:.1f} s after the kill"
    resumed = claude_env.message_requests[before]
    assert "FIRST-TURN" in resumed.text, "the resumed request carries the earlier turns (the same session)"
    assert "This step was interrupted" in resumed.text
    assert (
        f"restored on this machine from a checkpoint of {last_at:%Y-%m-%d %H:%M:%S} UTC (commit {last[:12]})"
        in resumed.text
    ), resumed.last_user_text

    done = _submit(fleet, remote, run_id, "--wait")
    assert done.returncode == 0, done.stdout + done.stderr + fleet.logs()
    [step] = status_json(fleet, run_id)["done"]
    assert step["ok"] is True and step["output"] == "FINISHED AFTER THE TAKEOVER", step
    assert step["attempt"] == 2 and step["worker"] != held[0]["worker"]
    assert step["session_id"] == sid
    assert step["restored_from"] == last, "the takeover started from the checkpoint pushed before the kill"
    assert claude_env.unscripted == [] and claude_env.rejected == []

    # Each machine's root holds its own files: the takeover's workspace has the checkpoint's files and its own
    # turn, not the dead attempt's unpushed scratch file; the dead root has nothing the takeover wrote.
    dead_ws, alive_ws = roots[dead] / "runs" / run_id, roots[alive] / "runs" / run_id
    assert (alive_ws / "first.txt").read_text() == "FIRST-TURN\n", "restored from the checkpoint"
    assert (alive_ws / "second.txt").read_text() == "FIRST-TURN\nSECOND-TURN\n"
    assert not (alive_ws / "scratch-dead.txt").exists(), "the dead machine's uncheckpointed file stayed there"
    assert (dead_ws / "scratch-dead.txt").read_text() == "DEAD-ATTEMPT\n"
    assert not (dead_ws / "second.txt").exists(), "the dead machine's root never sees the takeover's files"
    assert [r["step"] for r in _manifest(fleet, alive, run_id) if r.get("ok")] == ["work"]
    assert files_under(common) == set(), "the common path itself holds nothing: each worker saw its own root there"

    # The final branch on the remote has the step's result.
    assert remote_git(remote, "show", f"flower/{run_id}:second.txt").stdout == "FIRST-TURN\nSECOND-TURN\n"
    assert remote_git(remote, "show", f"flower/{run_id}:first.txt").stdout == "FIRST-TURN\n"
    assert remote_git(remote, "cat-file", "-e", f"flower/{run_id}:scratch-dead.txt").returncode != 0
    assert step["checkpoint"] == remote_git(remote, "rev-parse", f"flower/{run_id}").stdout.strip()
    text = fleet.flower("fleet", "status", run_id, name="reader")
    assert f"(workspace restored from checkpoint {last[:12]})" in text.stdout, text.stdout

    # A third process with another HOME, on neither machine, finds the one session by the common path (the
    # directory made empty there, as `flower -w` asks: the sessions are in the store, not in it).
    ws.mkdir(parents=True)
    listed = fleet.flower("-w", str(ws), "sessions", name="reader")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.split()[0] == sid and len(listed.stdout.strip().splitlines()) == 1, listed.stdout

    # Nothing of the dead attempt was appended after the takeover: the stored session is what it was at the
    # kill, followed by the takeover's own entries only (its prompt first).
    after = stored_entries(pg_url, ws, sid)
    assert after[: len(at_kill)] == at_kill, "the entries before the takeover are unchanged"
    added = json.dumps(after[len(at_kill) :])
    assert "This step was interrupted" in added and "SECOND-TURN" in added
    assert "scratch-dead" not in added, "an entry of the dead attempt's turn was appended after the takeover"


def test_three_runs_on_two_machines_complete_never_more_than_two_at_once(
    fleet: Fleet, claude_env: ScriptedServer
) -> None:
    spans = fleet.tmp / "spans.log"  # outside the roots: both machines append to it (start/end, with a clock)
    runs = [f"run-{i}-{uuid.uuid4().hex[:6]}" for i in range(3)]
    branches = {run_id: f"task-{i}" for i, run_id in enumerate(runs)}
    # One remote, a branch per run: each run's flows.py asks its own task (the script keys its replies on it).
    remote = bare_remote(fleet.tmp, {branches[r]: {"flows.py": flows_one_step(f"TASK {r}")} for r in runs})
    for run_id in runs:
        command = (
            f"echo MADE {run_id} > made.txt; echo start {run_id} $(date +%s.%N) >> {spans}; sleep 6; "
            f"echo end {run_id} $(date +%s.%N) >> {spans}"
        )
        claude_env.script(keyed(when_prompt(f"TASK {run_id}"), bash(command), Text(f"DONE {run_id}")))
    fleet.start_machine("a", "--slots", "1")
    fleet.start_machine("b", "--slots", "1")

    # Submitted at once (three client processes), so all three wait for the two slots together.
    submits = {
        run_id: fleet.start_flower(
            "fleet", "submit", "flows.py:main", "--repo", str(remote), "--branch", branches[run_id], "--run-id", run_id
        )  # fmt: skip
        for run_id in runs
    }
    for run_id, submit in submits.items():
        out, err = submit.communicate(timeout=120)
        assert submit.returncode == 0 and out.strip() == run_id, err
    for run_id in runs:
        done = _submit(fleet, remote, run_id, "--wait", branch=branches[run_id])
        assert done.returncode == 0, done.stdout + done.stderr + fleet.logs()
        assert f"{run_id}  completed" in done.stdout

    events, most = most_at_once(spans)
    assert events == 6, spans.read_text()
    assert most <= 2, f"{most} steps ran at once on two single-slot workers"
    steps = {run_id: status_json(fleet, run_id)["done"][0] for run_id in runs}
    assert len({s["worker"] for s in steps.values()}) == 2, f"both machines took steps: {steps}"
    assert claude_env.unscripted == [] and claude_env.rejected == []
    for run_id, step in steps.items():
        assert step["ok"] is True and step["output"] == f"DONE {run_id}", step
        # The step's files are on the machine that ran it, and its step-end checkpoint is on the remote.
        machine = fleet.machine_of(step["worker"])
        assert (fleet.own_root(machine) / "runs" / run_id / "made.txt").read_text() == f"MADE {run_id}\n"
        assert remote_git(remote, "show", f"flower/{run_id}:made.txt").stdout == f"MADE {run_id}\n"
        assert step["checkpoint"] == remote_git(remote, "rev-parse", f"flower/{run_id}").stdout.strip()
    assert files_under(fleet.tmp / "root") == set(), "each machine saw its own root at the common path"


def test_a_stalled_machine_is_superseded_by_the_other_and_its_late_appends_are_refused(
    fleet: Fleet, claude_env: ScriptedServer, pg_url: str
) -> None:
    run_id = f"run-{uuid.uuid4().hex[:8]}"
    remote = _one_remote(fleet, run_id)
    resumed = when(lambda r: "This step was interrupted" in r.text, "the takeover's requests")
    # The marker is printed in lower case: the command (in the session since before the stall) never holds it.
    late = when(lambda r: "slept-through-the-stall" in r.text, "the stalled attempt's request after its command")
    claude_env.script(
        # The stalled attempt's turn: its file, then a command that outlives the stall and prints the marker.
        Step(
            bash(
                "echo STALLED > result.txt; python3 -c 'import time; time.sleep(15)'; "
                "echo SLEPT-THROUGH-THE-STALL | tr A-Z a-z | tee scratch-slept.txt"
            ),
            ~resumed,
        ),
        Step(bash("echo TAKEOVER > result.txt"), resumed),
        Step(Text("DONE BY THE TAKEOVER"), resumed),
        Step(Text("LATE-FROM-THE-STALLED-WORKER"), late),
    )
    fleet.start_machine("a", "--slots", "1")
    fleet.start_machine("b", "--slots", "1")
    sent = _submit(fleet, remote, run_id, "--heartbeat-timeout", "5")
    assert sent.returncode == 0, sent.stderr
    wait_for(lambda: len(claude_env.message_requests) >= 1, 120, "the step's first model request")
    held = wait_for(lambda: status_json(fleet, run_id)["running"], 60, "the step is running on a worker")
    stalled = fleet.worker_by_identity(held[0]["worker"])
    name = fleet.machine_of(held[0]["worker"])
    wait_for(lambda: (fleet.own_root(name) / "runs" / run_id / "result.txt").exists(), 60, "the stalled turn's file")
    stalled.send_signal(signal.SIGSTOP)  # alive, its Claude Code still working, but no heartbeat, no renewal
    try:
        done = _submit(fleet, remote, run_id, "--wait")
        assert done.returncode == 0, done.stdout + done.stderr + fleet.logs()
        # The stalled machine's Claude Code went on meanwhile: its command has ended, so the attempt has a tool
        # result (and whatever follows) to append as soon as its worker runs again.
        slept = fleet.own_root(name) / "runs" / run_id / "scratch-slept.txt"
        wait_for(slept.exists, 60, "the stalled attempt's command ends")
    finally:
        stalled.send_signal(signal.SIGCONT)
    # The stalled worker wakes up still driving its step: its lease renewal finds the takeover and the step ends
    # "taken over" (whatever its harness produced meanwhile reaches the store only through the fenced view).
    rows = wait_for(
        lambda: [r for r in _manifest(fleet, name, run_id) if r.get("error")],
        60,
        f"the stalled machine records its step's end\n{fleet.logs()}",
    )
    assert "taken over" in rows[-1]["error"], rows
    print(f"the stalled attempt's late request reached the model: {any(late(r) for r in claude_env.message_requests)}")
    [step] = status_json(fleet, run_id)["done"]
    assert step["output"] == "DONE BY THE TAKEOVER" and step["attempt"] >= 2
    assert step["worker"] != held[0]["worker"], "the other machine took the step over"
    entries = json.dumps(stored_entries(pg_url, fleet.tmp / "root" / "runs" / run_id, step["session_id"]))
    assert "TAKEOVER" in entries and "DONE BY THE TAKEOVER" in entries
    assert "slept-through-the-stall" not in entries, "the superseded attempt's tool result was appended"
    assert "LATE-FROM-THE-STALLED-WORKER" not in entries, "the superseded attempt appended after the takeover"

    # Its files stay on its machine: the run's branch has the takeover's result, not the stalled attempt's.
    stalled.send_signal(signal.SIGTERM)
    assert stalled.wait(timeout=60) == 0, fleet.logs()
    assert (fleet.own_root(name) / "runs" / run_id / "result.txt").read_text() == "STALLED\n"
    assert remote_git(remote, "show", f"flower/{run_id}:result.txt").stdout == "TAKEOVER\n"
    assert step["checkpoint"] == remote_git(remote, "rev-parse", f"flower/{run_id}").stdout.strip()


def test_the_temporal_server_killed_and_restarted_mid_step_the_run_completes(
    claude_env: ScriptedServer, pg_url: str, tmp_path: Path
) -> None:
    from temporal_server import TemporalServer, TemporalServerError

    require_own_roots(tmp_path)
    try:
        server = TemporalServer.start()  # its own, not the session's: this test kills it
    except TemporalServerError as exc:
        pytest.skip(str(exc))
    fleet = Fleet(tmp_path, server.address, pg_url)
    try:
        run_id = f"run-{uuid.uuid4().hex[:8]}"
        remote = _one_remote(fleet, run_id)
        claude_env.script(
            bash("echo BEFORE-THE-RESTART > made.txt; python3 -c 'import time; time.sleep(8)'"),
            Text("DONE DESPITE THE RESTART"),
        )
        fleet.start_machine("a", "--slots", "1")
        fleet.start_machine("b", "--slots", "1")
        sent = _submit(fleet, remote, run_id)
        assert sent.returncode == 0, sent.stderr
        wait_for(lambda: len(claude_env.message_requests) >= 1, 120, "the step's first model request")
        assert len(claude_env.message_requests) == 1, "the step is in its 8 s tool call: mid-step"

        server.restart()  # SIGKILL, then the same port and db file: the run's history survives

        done = _submit(fleet, remote, run_id, "--wait")
        assert done.returncode == 0, done.stdout + done.stderr + fleet.logs()
        state = status_json(fleet, run_id)
        assert state["status"] == "completed"
        [step] = state["done"]
        assert step["ok"] is True and step["output"] == "DONE DESPITE THE RESTART", step
        assert step["session_id"] == step_session_id(run_id, "work")
        assert remote_git(remote, "show", f"flower/{run_id}:made.txt").stdout == "BEFORE-THE-RESTART\n"
        assert claude_env.unscripted == [] and claude_env.rejected == []
    finally:
        fleet.stop()
        server.stop()


def test_cancel_stops_the_running_step_on_its_machine_within_the_heartbeat_interval_and_status_says_so(
    fleet: Fleet, claude_env: ScriptedServer
) -> None:
    run_id = f"run-{uuid.uuid4().hex[:8]}"
    remote = _one_remote(fleet, run_id)
    claude_env.script(bash("python3 -c 'import time; time.sleep(120)'"), Text("NEVER SENT"))
    fleet.start_machine("a", "--slots", "1")  # heartbeats every second (fleet_helpers)
    fleet.start_machine("b", "--slots", "1")
    sent = _submit(fleet, remote, run_id)
    assert sent.returncode == 0, sent.stderr
    wait_for(lambda: len(claude_env.message_requests) >= 1, 120, "the step's first model request")
    held = wait_for(lambda: status_json(fleet, run_id)["running"], 60, "the step is running")
    machine = fleet.machine_of(held[0]["worker"])

    asked = time.time()  # before the cancel command starts: what it took includes its start-up (~3 s here)
    cancelled = fleet.flower("fleet", "cancel", run_id)
    assert cancelled.returncode == 0, cancelled.stderr
    state = wait_for(
        lambda: (s := status_json(fleet, run_id))["status"] == "cancelled" and s, 60, "status says cancelled"
    )
    assert state["done"][-1]["step"] == "work" and state["done"][-1]["error"] == "cancelled"
    shown = fleet.flower("fleet", "status", run_id)
    assert f"{run_id}  cancelled" in shown.stdout and "work: failed: cancelled" in shown.stdout, shown.stdout
    # The step is recorded where the machine ran it: the manifest row of an interrupted step, and when it ended.
    [row] = _manifest(fleet, machine, run_id)
    assert row["step"] == "work" and row["ok"] is False and row["error"], row
    took = cancel_took(fleet, run_id, row, asked)
    # As on a shared root (test_fleet_e2e): a heartbeat (1 s), ~1 s for the interrupted Bash call to end, the
    # server's whole seconds (+1 s), and 3 s more for a loaded machine.
    assert took <= 1 + 1 + 1 + 3, f"the cancel took {took:.1f} s to stop the step"
    logs = fleet.flower("fleet", "logs", run_id)
    assert "run cancelled" in logs.stdout, logs.stdout
    assert not _manifest(fleet, "b" if machine == "a" else "a", run_id), "the other machine never ran the step"


def test_fleet_answer_reaches_a_clarifiers_question_and_its_session_goes_on_on_the_other_machine(
    fleet: Fleet, claude_env: ScriptedServer, pg_url: str
) -> None:
    run_id = f"go-{uuid.uuid4().hex[:8]}"
    remote = bare_remote(fleet.tmp, {"main": {"README.md": "The greeter's repository.\n"}})
    answered = when(lambda r: ANSWER in r.last_user_text)
    claude_env.script(
        *keyed(CLARIFIER & ~answered, ToolUse("mcp__human__ask", {"question": QUESTION, "options": ["en", "fr"]})),
        *keyed(CLARIFIER & answered, Text(BRIEF)),
        *keyed(GOAL_SETTER, Text(GOAL)),
        *keyed(LEAD, Text("Bonjour written. ALL-DONE")),
        *keyed(JUDGE, verdict("achieved", "the check passes")),
    )
    workers = {name: fleet.start_machine(name, "--slots", "1") for name in ("a", "b")}

    submitted = fleet.flower(
        "fleet", "submit", "build a greeter", "--repo", str(remote), "--branch", "main", "--run-id", run_id
    )  # fmt: skip
    assert submitted.returncode == 0, submitted.stderr

    def asking() -> bool:
        state = status_json(fleet, run_id)
        return state["question"] == QUESTION and not state["running"]

    wait_for(asking, 180, f"the question in `status`\n{fleet.logs()}")
    # The machine that asked stops (it holds no slot while the question waits): the answered phase can only go
    # on on the other one, from the checkpoint pushed at the question.
    logs = fleet.flower("fleet", "logs", run_id).stdout
    [started] = [line for line in logs.splitlines() if "clarify: attempt 1 started on " in line]
    asker = fleet.machine_of(started.rpartition(" started on ")[2])
    asked_at = remote_git(remote, "rev-parse", f"flower/{run_id}").stdout.strip()
    assert "question in clarify" in remote_git(remote, "show", "-s", "--format=%B", asked_at).stdout
    workers[asker].send_signal(signal.SIGTERM)
    assert workers[asker].wait(timeout=60) == 0, fleet.logs()

    answer = fleet.flower("fleet", "answer", run_id, ANSWER)
    assert answer.returncode == 0, answer.stderr
    done = fleet.flower("fleet", "submit", "build a greeter", "--repo", str(remote), "--run-id", run_id, "--wait")
    assert done.returncode == 0, done.stdout + done.stderr + fleet.logs()
    assert done.stdout.startswith(f"{run_id}  completed  go"), done.stdout
    assert claude_env.unscripted == [] and claude_env.rejected == []

    # The clarifier's next request carries the answer, in the same session that asked: the question is in its
    # history, and its workspace was restored from the question's checkpoint on this machine.
    clarifier = [r for r in claude_env.message_requests if CLARIFIER(r)]
    after_question = [r for r in clarifier if QUESTION in r.text]
    assert after_question and ANSWER in after_question[0].last_user_text, (
        "the first clarifier request after the question is the one that carries the answer"
    )
    assert f"(commit {asked_at[:12]})" in after_question[0].text, after_question[0].last_user_text
    state = status_json(fleet, run_id)
    assert state["question"] == "" and state["answers"] == [ANSWER]
    assert [o["step"] for o in state["done"]] == ["clarify", "goal", "work"]
    clarify = state["done"][0]
    assert clarify["ok"] is True and clarify["session_id"] == step_session_id(run_id, "clarify")
    assert fleet.machine_of(clarify["worker"]) != asker and clarify["restored_from"] == asked_at, clarify
    entries = json.dumps(stored_entries(pg_url, fleet.tmp / "root" / "runs" / run_id, clarify["session_id"]))
    assert QUESTION in entries and ANSWER in entries, "the question and its answer are in the one stored session"
    # The brief the clarifier wrote on this machine is in the run's branch.
    brief = remote_git(remote, "show", f"flower/{run_id}:.flower/notes/brief.md")
    assert "Build the greeter" in brief.stdout, brief.stderr


def test_status_analyze_and_sessions_from_a_third_process_with_another_home_show_the_run(
    fleet: Fleet, claude_env: ScriptedServer
) -> None:
    run_id = f"run-{uuid.uuid4().hex[:8]}"
    remote = _one_remote(fleet, run_id)
    claude_env.script(bash("echo HELLO > hello.txt"), Text("HELLO-FROM-THE-FLEET"))
    fleet.start_machine("a", "--slots", "1")
    fleet.start_machine("b", "--slots", "1")
    done = _submit(fleet, remote, run_id, "--wait")
    assert done.returncode == 0, done.stdout + done.stderr + fleet.logs()
    sid = step_session_id(run_id, "work")

    # The reader: its own HOME, no fleet root and no store in its environment (--store says where), on neither
    # machine — it sees the common path as it is here, empty.
    status = fleet.flower("fleet", "status", run_id, name="reader", machine=False)
    assert status.returncode == 0, status.stderr
    assert status.stdout.startswith(f"{run_id}  completed  one-step"), status.stdout
    assert f"work: ok  session {sid}  on " in status.stdout, status.stdout

    analyzed = fleet.flower("--store", fleet.store, "--json", "analyze", "--run", run_id, name="reader", machine=False)
    assert analyzed.returncode == 0, analyzed.stderr
    assert sid in analyzed.stdout and '"work"' in analyzed.stdout, analyzed.stdout

    ws = fleet.tmp / "root" / "runs" / run_id
    assert files_under(fleet.tmp / "root") == set(), "the run's files are on the machines, not here"
    ws.mkdir(parents=True)  # `flower -w` asks for an existing directory: the sessions are in the store, not in it
    listed = fleet.flower("--store", fleet.store, "-w", str(ws), "sessions", name="reader", machine=False)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.split()[0] == sid and len(listed.stdout.strip().splitlines()) == 1, listed.stdout
    assert not (fleet.tmp / "home-reader" / "flower-fleet").exists(), "the reader made no fleet root of its own"
