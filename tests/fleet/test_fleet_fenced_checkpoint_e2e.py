"""A superseded fleet attempt is fenced out of the run's branch as it is out of the store: two machines (each a
fleet root of its own, as in test_fleet_roots_e2e.py), one bare git remote, a worker stopped with SIGSTOP (a
paused VM, a closed laptop lid) past the heartbeat timeout while its Claude Code goes on, the run completed by
the other machine, then the stopped worker continued with SIGCONT.

What the continued worker must not do: push its stale checkpoint over the completed run's branch, append to the
step's session, or ask the model anything more once it could have known it was superseded.
"""

from __future__ import annotations

import json
import os
import signal
import time
import uuid
from typing import Any

import pytest
from fleet_helpers import Fleet, bare_remote, remote_git, require_own_roots, status_json, stored_entries, wait_for

from harness import ScriptedServer, Step, Text, bash, keyed, when, when_prompt

pytestmark = pytest.mark.e2e

# How long after SIGCONT a request may still leave the continued worker: the moment it runs again it may answer
# what its Claude Code asked during the stall before it has read the lease (a read of the store).
_WAKE_GRACE_S = 1.0


def _flows_two_steps(run_id: str) -> str:
    """A flows.py of two steps, ``one`` then ``two``, each asked a prompt the script keys its replies on."""
    return (
        "from flower_cli import AgentSpec, Step, Workflow\n"
        "writer = AgentSpec('writer', 'Write tersely.', allowed_tools=['Bash'])\n"
        "def main():\n"
        f"    return Workflow([Step('one', writer, 'ONE {run_id}'), Step('two', writer, 'TWO {run_id}')],"
        " name='two-steps')\n"
    )


def _manifest(fleet: Fleet, machine: str, run_id: str) -> list[dict[str, Any]]:
    path = fleet.own_root(machine) / "manifests" / run_id / "manifest.json"
    rows: list[dict[str, Any]] = json.loads(path.read_text()) if path.is_file() else []
    return rows


def _group_alive(pgid: int) -> bool:
    """Whether any process of the process group ``pgid`` (a worker and what it started) is still running."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_superseded_workers_checkpoint_is_refused_and_it_asks_the_model_nothing_more(
    fleet: Fleet, claude_env: ScriptedServer, pg_url: str
) -> None:
    require_own_roots(fleet.tmp)
    run_id = f"run-{uuid.uuid4().hex[:8]}"
    remote = bare_remote(fleet.tmp, {"main": {"flows.py": _flows_two_steps(run_id)}})
    step_one, step_two = when_prompt(f"ONE {run_id}"), when_prompt(f"TWO {run_id}")
    resumed = when(lambda r: "This step was interrupted" in r.text, "the takeover's requests")
    late = when(lambda r: "slept-through-the-stall" in r.text, "the stopped attempt's request after its command")
    release = fleet.tmp / "release"  # outside the fleet roots: the test lets the stopped attempt's command end
    claude_env.script(
        # The attempt that is stopped: its file (pushed by a periodic checkpoint), then a command that outlives
        # the stop: it leaves a file no checkpoint of the run may carry (stale.txt is not ignored), and ends 10 s
        # after the test releases it — when a Claude Code nobody stopped would send its result to the model. (The
        # continued worker notices within a second or two; 2 s proved too tight on a loaded CI machine, where
        # its first checkpoint after the wake — git commit, fetch, push — alone took that long.)
        *keyed(
            step_one & ~resumed & ~late,
            bash(
                "echo STALLED > one.txt; python3 -c 'import time; time.sleep(8)'; echo STALE > stale.txt; "
                f"while [ ! -e {release} ]; do sleep 0.1; done; sleep 10; "
                "echo SLEPT-THROUGH-THE-STALL | tr A-Z a-z | tee scratch-slept.txt"
            ),
        ),
        *keyed(step_one & resumed, bash("echo TAKEOVER > one.txt"), Text("ONE DONE BY THE TAKEOVER")),
        *keyed(step_two, bash("echo STEP-TWO > two.txt"), Text("TWO DONE")),
        # Answered if it is asked at all, with more work for a checkpoint to carry.
        Step(bash("echo LATE > late.txt"), late),
        Step(Text("LATE-FROM-THE-STOPPED-WORKER"), late),
    )
    # Periodic checkpoints every second: one holding the stopped attempt's first file is pushed before the stop,
    # and the continued worker's next one is due the moment it runs again.
    for machine in ("a", "b"):
        fleet.start_machine(machine, "--slots", "1", "--checkpoint-every", "1")
    sent = fleet.flower(
        "fleet", "submit", "flows.py:main", "--repo", str(remote), "--branch", "main", "--run-id", run_id,
        "--heartbeat-timeout", "5",
    )  # fmt: skip
    assert sent.returncode == 0, sent.stderr
    held = wait_for(lambda: status_json(fleet, run_id)["running"], 120, "step one is running on a worker")
    stopped = fleet.worker_by_identity(held[0]["worker"])
    name = fleet.machine_of(held[0]["worker"])
    stale_ws = fleet.own_root(name) / "runs" / run_id
    wait_for(
        lambda: remote_git(remote, "show", f"flower/{run_id}:one.txt").stdout == "STALLED\n",
        60,
        f"a periodic checkpoint of the first attempt on the remote\n{fleet.logs()}",
    )
    stopped.send_signal(signal.SIGSTOP)  # alive, its Claude Code still working, but no heartbeat, no renewal
    try:
        done = fleet.flower(
            "fleet", "submit", "flows.py:main", "--repo", str(remote), "--run-id", run_id, "--wait", timeout=300
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr + fleet.logs()
        state = status_json(fleet, run_id)
        assert state["status"] == "completed", state
        assert [s["step"] for s in state["done"]] == ["one", "two"]
        assert all(s["worker"] != held[0]["worker"] for s in state["done"]), "the other machine ran both steps"
        completed = remote_git(remote, "rev-parse", f"flower/{run_id}").stdout.strip()
        assert state["done"][-1]["checkpoint"] == completed
        # The stopped attempt's Claude Code went on meanwhile: its workspace holds a file the completed run does
        # not have — what a checkpoint of the stale attempt would push.
        wait_for((stale_ws / "stale.txt").exists, 60, "the stopped attempt's command writes stale.txt")
        session = state["done"][0]["session_id"]
        at_completion = stored_entries(pg_url, fleet.tmp / "root" / "runs" / run_id, session)
        release.touch()
    finally:
        stopped.send_signal(signal.SIGCONT)
    continued = time.monotonic()

    # The continued worker learns it was superseded and records its step's end on its machine ...
    rows = wait_for(
        lambda: [r for r in _manifest(fleet, name, run_id) if r.get("error")],
        60,
        f"the stopped machine records its step's end\n{fleet.logs()}",
    )
    assert rows[-1]["step"] == "one", rows
    # ... and then it is stopped: nothing of it can push, append or ask after this.
    stopped.send_signal(signal.SIGTERM)
    assert stopped.wait(timeout=60) == 0, fleet.logs()
    log = (fleet.tmp / f"worker-{name}.log").read_text()
    wait_for(lambda: not _group_alive(stopped.pid), 60, "the stopped worker's Claude Code and its command end")
    later = [r.received_at - continued for r in claude_env.message_requests if r.received_at > continued]
    print(f"model requests after SIGCONT, at (s): {[round(t, 2) for t in later]}")
    # Its Claude Code was stopped in the middle of the command, not left to finish it and report to the model.
    assert not (stale_ws / "scratch-slept.txt").exists(), log

    # No model request from the stale attempt once it could have learnt it was superseded.
    assert all(t <= _WAKE_GRACE_S for t in later), f"requests {later} s after the worker continued\n{log}"
    assert claude_env.unscripted == [] and claude_env.rejected == []

    # The run's branch still ends on the completed run's work.
    assert remote_git(remote, "rev-parse", f"flower/{run_id}").stdout.strip() == completed, log
    assert remote_git(remote, "show", f"flower/{run_id}:one.txt").stdout == "TAKEOVER\n"
    assert remote_git(remote, "show", f"flower/{run_id}:two.txt").stdout == "STEP-TWO\n"
    for path in ("stale.txt", "late.txt"):
        assert remote_git(remote, "cat-file", "-e", f"flower/{run_id}:{path}").returncode != 0, path
    # The stale attempt's files stay on its machine.
    assert (stale_ws / "one.txt").read_text() == "STALLED\n"

    # The store holds nothing of the stale attempt after the takeover.
    after = json.dumps(stored_entries(pg_url, fleet.tmp / "root" / "runs" / run_id, session))
    assert after == json.dumps(at_completion), "the session changed after the run completed"
    for marker in ("slept-through-the-stall", "LATE"):
        assert marker not in after, marker

    # Its log says so in one line each, with no traceback.
    refused = [line for line in log.splitlines() if " refused: " in line]
    print(f"refusals logged: {refused}")
    assert len(refused) <= 1, refused
    assert "Traceback" not in log, log
