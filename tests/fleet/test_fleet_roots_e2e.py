"""flower-fleet end to end with two machines: two worker processes, each with a fleet root of its own, and one
bare git repository as the run's remote — the workspace moves with the step through checkpoints, not through a
shared disk.

Two machines are emulated on one honestly: each worker runs in a mount namespace of its own where its own root
directory is bind-mounted at the one common ``FLOWER_FLEET_ROOT`` path, so both see the same workspace path (the
SDK keys sessions by it, as two machines with the same fleet root would) and different files. Where unshare or
mount is not permitted the test is skipped with the reason; under CI that is a failure.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import pytest
from fleet_helpers import Fleet, kill_machine, own_roots_unsupported, status_json, wait_for

from flower_fleet import step_session_id
from harness import ScriptedServer, Text, bash

pytestmark = pytest.mark.e2e

_UNDER_CI = os.environ.get("CI", "").lower() not in ("", "0", "false", "no")
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@localhost", "-c", "init.defaultBranch=main"]


@pytest.fixture
def fleet(claude_env: ScriptedServer, temporal_address: str, pg_url: str, tmp_path: Path) -> Iterator[Fleet]:
    reason = own_roots_unsupported(tmp_path)
    if reason is not None:
        if _UNDER_CI:
            pytest.fail(f"CI must run the two-machine fleet test, but {reason}", pytrace=False)
        pytest.skip(reason)
    made = Fleet(tmp_path, temporal_address, pg_url)
    try:
        yield made
    finally:
        made.stop()


def _flows(prompt: str) -> str:
    return (
        "from flower_cli import AgentSpec, Step, Workflow\n"
        "writer = AgentSpec('writer', 'Write tersely.', allowed_tools=['Bash'])\n"
        "def main():\n"
        f"    return Workflow([Step('work', writer, {prompt!r})], name='one-step')\n"
    )


def _bare_remote(tmp: Path, flows: str) -> Path:
    """A bare repository holding flows.py and a .gitignore (``scratch-*`` never reaches a checkpoint)."""
    remote, seed = tmp / "remote.git", tmp / "seed"
    subprocess.run([*GIT, "init", "--quiet", "--bare", str(remote)], check=True)
    subprocess.run([*GIT, "init", "--quiet", str(seed)], check=True)
    (seed / "flows.py").write_text(flows)
    (seed / ".gitignore").write_text("scratch-*\n")
    subprocess.run([*GIT, "-C", str(seed), "add", "flows.py", ".gitignore"], check=True)
    subprocess.run([*GIT, "-C", str(seed), "commit", "--quiet", "-m", "flows"], check=True)
    subprocess.run([*GIT, "-C", str(seed), "push", "--quiet", str(remote), "HEAD:main"], check=True)
    return remote


def _remote(remote: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "--git-dir", str(remote), *args], capture_output=True, text=True)


def _files(root: Path) -> set[str]:
    """The files under ``root``, relative, leaving out git's own."""
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and ".git" not in p.parts}


def _entries(pg_url: str, workspace: Path, session_id: str) -> list[Any]:
    from claude_agent_sdk import project_key_for_directory

    from flower_stores import store_from_url

    store = store_from_url(pg_url)
    try:
        key = {"project_key": project_key_for_directory(str(workspace)), "session_id": session_id}
        return list(anyio.run(store.load, key) or [])
    finally:
        store.close()


def test_a_sigkilled_workers_step_resumes_on_another_machine_from_the_last_checkpoint(
    fleet: Fleet, claude_env: ScriptedServer, pg_url: str
) -> None:
    run_id = f"run-{uuid.uuid4().hex[:8]}"
    remote = _bare_remote(fleet.tmp, _flows(f"TASK {run_id}"))
    common = fleet.tmp / "root"  # FLOWER_FLEET_ROOT on both machines; in this namespace, an empty mount point
    roots = {"a": fleet.tmp / "root-a", "b": fleet.tmp / "root-b"}
    claude_env.script(
        bash("echo FIRST-TURN > first.txt"),
        # The turn during which its machine dies: a file no checkpoint holds (.gitignore), then a long command.
        bash("echo DEAD-ATTEMPT > scratch-dead.txt; python3 -c 'import time; time.sleep(120)'"),
        bash("cat first.txt > second.txt; echo SECOND-TURN >> second.txt"),  # the takeover's first reply
        Text("FINISHED AFTER THE TAKEOVER"),
    )
    # Checkpoints every 2 s while the step runs, so one holding first.txt is pushed mid-turn.
    workers = {
        name: fleet.start_worker(name, "--slots", "1", "--checkpoint-every", "2", own_root=roots[name])
        for name in ("a", "b")
    }
    heartbeat_timeout = 5.0
    sent = fleet.flower(
        "fleet", "submit", "flows.py:main", "--repo", str(remote), "--branch", "main", "--run-id", run_id,
        "--heartbeat-timeout", str(heartbeat_timeout),
    )  # fmt: skip
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
        lambda: _remote(remote, "show", f"flower/{run_id}:first.txt").stdout == "FIRST-TURN\n",
        60,
        "a periodic checkpoint with first.txt on the remote",
    )
    before = len(claude_env.message_requests)
    kill_machine(doomed)
    killed_at = time.monotonic()
    # Nothing pushes now: the dead machine's git died with it, and the other takes the step only after the
    # heartbeat timeout. So this is the checkpoint the takeover must restore.
    last = _remote(remote, "rev-parse", f"flower/{run_id}").stdout.strip()
    last_at = datetime.fromtimestamp(int(_remote(remote, "show", "-s", "--format=%ct", last).stdout), UTC)
    sid = step_session_id(run_id, "work")
    ws = common / "runs" / run_id
    at_kill = _entries(pg_url, ws, sid)
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

    done = fleet.flower(
        "fleet", "submit", "flows.py:main", "--repo", str(remote), "--run-id", run_id, "--wait"
    )  # fmt: skip
    logs = "".join((fleet.tmp / f"worker-{n}.log").read_text() for n in ("a", "b"))
    assert done.returncode == 0, done.stdout + done.stderr + logs
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
    assert (roots[alive] / "manifests" / run_id / "manifest.json").is_file()
    rows = json.loads((roots[alive] / "manifests" / run_id / "manifest.json").read_text())
    assert [r["step"] for r in rows if r.get("ok")] == ["work"], rows
    assert _files(common) == set(), "the common path itself holds nothing: each worker saw its own root there"

    # The final branch on the remote has the step's result.
    assert _remote(remote, "show", f"flower/{run_id}:second.txt").stdout == "FIRST-TURN\nSECOND-TURN\n"
    assert _remote(remote, "show", f"flower/{run_id}:first.txt").stdout == "FIRST-TURN\n"
    assert _remote(remote, "cat-file", "-e", f"flower/{run_id}:scratch-dead.txt").returncode != 0
    assert step["checkpoint"] == _remote(remote, "rev-parse", f"flower/{run_id}").stdout.strip()
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
    after = _entries(pg_url, ws, sid)
    assert after[: len(at_kill)] == at_kill, "the entries before the takeover are unchanged"
    added = json.dumps(after[len(at_kill) :])
    assert "This step was interrupted" in added and "SECOND-TURN" in added
    assert "scratch-dead" not in added, "an entry of the dead attempt's turn was appended after the takeover"
