"""A killed flower leaves nothing acting behind the user's back: the harness it started, and what the harness
started, end within a second of flower's death (``kill -9`` included) and send no request after; the next
``flower`` continues the same session with a valid request history.

Real `flower`, real Claude Code, the scripted server; every wait is for a condition, with a deadline.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from harness import ScriptedServer, Step, Text, Turn, bash, dispatch, keyed, when_main, when_notified

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc; the Linux guarantee"),
]

WITHIN_S = 1.0  # the requirement: nothing of the session runs 1 s after flower died
SETUP_S = 120.0  # for things to start on a loaded machine; not what is under test


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as handle:
            return [int(p) for p in handle.read().split()]
    except OSError:
        return []


def _tree(root: int) -> list[int]:
    found, todo = [], [root]
    while todo:
        for child in _children(todo.pop()):
            found.append(child)
            todo.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _wait_until(condition: Callable[[], bool], within: float, what: str) -> None:
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for: {what}"
        time.sleep(0.02)


@pytest.fixture
def leftovers() -> Iterator[list[int]]:
    """Pids a test saw; killed at the end whatever happened, so a failing test leaves nothing running."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _start(args: list[str], cwd: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "flower_cli", *args],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _kill_and_check(flower: subprocess.Popen[bytes], family: list[int]) -> float:
    """SIGKILL flower alone (not its group); every process it started must be gone within WITHIN_S."""
    os.kill(flower.pid, signal.SIGKILL)
    killed = time.monotonic()
    flower.wait(30)
    deadline = killed + WITHIN_S
    while any(_alive(p) for p in family) and time.monotonic() < deadline:
        time.sleep(0.01)
    left = {p: _cmdline(p) for p in family if _alive(p)}
    assert not left, f"still running {WITHIN_S} s after flower died: {left}"
    return time.monotonic() - killed


def _session_ids(workspace: Path) -> list[str]:
    with sqlite3.connect(workspace / "runs" / "sessions.db") as db:
        keys = [k for (k,) in db.execute("select store_key from meta")]
    return sorted({k.split("/")[1] for k in keys if k.count("/") == 1})


def test_sigkill_of_flower_once_mid_tool_ends_the_harness_and_the_session_resumes(
    claude_env: ScriptedServer, workspace: Path, leftovers: list[int]
) -> None:
    # The tool waits for a file created only after the kill: a harness that outlived flower would then finish
    # it and ask the model again.
    claude_env.script(bash("touch started; until [ -e go ]; do sleep 0.05; done; echo released"))
    flower = _start(["once", "-t", "Bash", "run the slow step"], workspace)
    _wait_until(lambda: (workspace / "started").exists(), SETUP_S, "the Bash tool starts")
    family = _tree(flower.pid)
    leftovers.extend(family)
    assert any("until [ -e go ]" in _cmdline(p) for p in family), [_cmdline(p) for p in family]
    requests = len(claude_env.message_requests)

    _kill_and_check(flower, family)
    (workspace / "go").touch()  # nothing is left to see it, so nothing asks the model anything any more
    assert len(claude_env.message_requests) == requests

    (session,) = _session_ids(workspace)
    claude_env.script(Text("Picked up."))
    woke = subprocess.run(
        [sys.executable, "-m", "flower_cli", "once", "-t", "Bash", "--resume", session, "go on"],
        cwd=workspace,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert woke.returncode == 0, woke.stderr
    assert woke.stdout.strip() == "Picked up."
    resumed = claude_env.message_requests[-1]
    assert "run the slow step" in resumed.text, "the resumed request carries the earlier turns"
    assert not claude_env.rejected, claude_env.rejected  # every tool_use answered, no empty text: a valid history


def test_sigkill_of_flower_with_a_worker_running_ends_every_process(
    claude_env: ScriptedServer, workspace: Path, leftovers: list[int]
) -> None:
    # A coordinator dispatches a worker whose Bash call blocks; flower dies while the worker works.
    main = when_main()
    worker = dispatch(
        "survey",
        bash("touch worker-started; until [ -e go ]; do sleep 0.05; done; echo w"),
        bash("echo again"),
        Text("WORKER-DONE"),
        prompt="PIECE-SURVEY: survey the repo",
    )
    claude_env.script(
        *keyed(main & ~when_notified(), Turn([worker]), Text("Sent a worker; waiting.")),
        Step(Text("The worker is done."), main & when_notified("WORKER-DONE")),
    )
    flower = _start(["once", "-t", "Agent,Bash", "survey the repo with a worker"], workspace)
    _wait_until(lambda: (workspace / "worker-started").exists(), SETUP_S, "the worker's Bash tool starts")
    family = _tree(flower.pid)
    leftovers.extend(family)
    requests = len(claude_env.message_requests)

    _kill_and_check(flower, family)
    (workspace / "go").touch()
    assert len(claude_env.message_requests) == requests
