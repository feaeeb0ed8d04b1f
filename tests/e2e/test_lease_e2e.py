"""One driver per session, end to end: real `flower` processes, the real Claude Code binary, the scripted server,
and the session store on SQLite (the run dir's sessions.db) and on a real PostgreSQL server.

- a second `flower` on a session another one is driving exits 3, naming the holder (host, pid, run);
- a lease of another machine is waited out, then taken over once it expired;
- a lease of a dead process of this machine is taken over at once;
- a flower that stalled (SIGSTOP) past its lease while another took the session over cannot add to it when it
  comes back: its step ends "session taken over" (exit 3), and the store holds nothing of it twice.

Every wait is for a condition, with a deadline.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from e2e._runs import store_place

from flower_stores import LeaseOwner, store_from_url
from harness import ScriptedServer, Text, bash

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(sys.platform == "win32", reason="SIGSTOP/SIGCONT")]

SETUP_S = 120.0  # for things to start on a loaded machine; not what is under test
SLOW_TOOL = "touch started; until [ -e go ]; do sleep 0.05; done; echo released"


class Place:
    """Where a test's sessions live: the workspace, the ``flower`` options that name the store, its URL."""

    def __init__(self, workspace: Path, options: list[str], url: str) -> None:
        self.workspace, self.options, self.url = workspace, options, url

    def flower(
        self, *args: str, env: dict[str, str] | None = None, timeout: float = 240
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "flower_cli", *self.options, *args],
            cwd=self.workspace,
            env={**os.environ, "FLOWER_NO_UPDATE": "1", **(env or {})},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def start(self, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "flower_cli", *self.options, *args],
            cwd=self.workspace,
            env={**os.environ, "FLOWER_NO_UPDATE": "1", **(env or {})},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def store(self, call: Callable[[Any], Any]) -> Any:
        """Run ``await call(store)`` on a store of our own, opened on the same place as flower's."""

        async def main() -> Any:
            store = store_from_url(self.url)
            try:
                return await call(store)
            finally:
                store.close()

        return anyio.run(main)

    def project_key(self) -> str:
        from claude_agent_sdk import project_key_for_directory

        return project_key_for_directory(str(self.workspace.resolve()))

    def entries(self, sid: str) -> list[dict[str, Any]]:
        key = {"project_key": self.project_key(), "session_id": sid}
        return self.store(lambda s: s.load(key)) or []

    def lease(self, sid: str) -> Any:
        return self.store(lambda s: s.read_lease(self.project_key(), sid))

    def plant(self, sid: str, owner: LeaseOwner, ttl: float) -> Any:
        """A lease row as another process would have written it."""
        return self.store(lambda s: s.acquire_lease(self.project_key(), sid, owner, ttl=ttl))


@pytest.fixture(params=["sqlite", "postgres"])
def place(request: pytest.FixtureRequest, tmp_path: Path) -> Place:
    return Place(*store_place(request, tmp_path))


@pytest.fixture
def leftovers() -> Iterator[list[subprocess.Popen[str]]]:
    """Processes a test started; killed at the end whatever happened."""
    started: list[subprocess.Popen[str]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGCONT)
            proc.kill()
            proc.wait(30)


def _wait_until(condition: Callable[[], bool], within: float, what: str) -> None:
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for: {what}"
        time.sleep(0.05)


def _manifest_sid(place: Place) -> str:
    rows = json.loads((place.workspace / "runs" / "manifest.json").read_text())
    sid: str = rows[-1]["session_id"]
    return sid


def _one_error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert lines, "nothing on stderr"
    return lines[-1]


def test_a_second_flower_on_a_driven_session_exits_3_naming_the_holder(
    claude_env: ScriptedServer, place: Place, leftovers: list[subprocess.Popen[str]]
) -> None:
    sid = _manifest_sid_after(place, claude_env)
    claude_env.script(bash(SLOW_TOOL), Text("HOLDER-DONE"))
    holder = place.start("once", "-t", "Bash", "--resume", sid, "run the slow step")
    leftovers.append(holder)
    _wait_until(lambda: (place.workspace / "started").exists(), SETUP_S, "the holder's tool starts")
    asked = len(claude_env.message_requests)

    second = place.flower("once", "--resume", sid, "me too")
    assert second.returncode == 3, (second.stdout, second.stderr)
    line = _one_error_line(second.stderr)
    for part in (sid[:8], f"host {socket.gethostname()}", f"pid {holder.pid}", "run ", "since", "until"):
        assert part in line, line
    as_json = place.flower("--json", "once", "--resume", sid, "me too")
    assert as_json.returncode == 3
    error = json.loads(as_json.stdout.strip().splitlines()[-1])
    assert error["kind"] == "error" and error["exit"] == 3 and f"pid {holder.pid}" in error["message"]
    assert len(claude_env.message_requests) == asked, "the refused processes asked the model nothing"

    (place.workspace / "go").touch()
    out, err = holder.communicate(timeout=SETUP_S)
    assert holder.returncode == 0, err
    assert place.lease(sid) is None, "released when its step ended"
    assert "HOLDER-DONE" in json.dumps(place.entries(sid))


def _manifest_sid_after(place: Place, server: ScriptedServer) -> str:
    server.script(Text("First answer: remember PAPAYA."))
    done = place.flower("once", "remember a word")
    assert done.returncode == 0, done.stderr
    return _manifest_sid(place)


def test_another_machines_lease_is_waited_out_then_taken_over(claude_env: ScriptedServer, place: Place) -> None:
    sid = _manifest_sid_after(place, claude_env)
    far = LeaseOwner("a-far-away-box", 4242, "run-far")
    planted = place.plant(sid, far, ttl=600)

    refused = place.flower("once", "--resume", sid, "too early")
    assert refused.returncode == 3, refused.stderr
    line = _one_error_line(refused.stderr)
    assert "host a-far-away-box" in line and "pid 4242" in line and "run run-far" in line, line

    # Its last renewal ran for half a second: then it lapses, as when that machine stopped renewing.
    place.store(lambda s: s.renew_lease(planted, ttl=0.5))
    _wait_until(lambda: place.lease(sid) is None, 60, "the planted lease expires")
    claude_env.script(Text("TAKEN-OVER-DONE"))
    done = place.flower("once", "--resume", sid, "now")
    assert done.returncode == 0, done.stderr
    assert "TAKEN-OVER-DONE" in json.dumps(place.entries(sid))
    row = place.store(lambda s: _row(s, place.project_key(), sid))
    assert row.epoch > planted.epoch and row.released, "taken over at a later epoch, then released"


def _row(store: Any, project_key: str, sid: str) -> Any:
    async def read() -> Any:
        backend = getattr(store, "backend", store)
        row, _now = await anyio.to_thread.run_sync(backend._lease_read, project_key, sid)
        return row

    return read()


def test_a_dead_process_lease_on_this_machine_is_taken_over_at_once(claude_env: ScriptedServer, place: Place) -> None:
    sid = _manifest_sid_after(place, claude_env)
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, check=True)
    dead = LeaseOwner(socket.gethostname(), int(gone.stdout), "run-killed")
    place.plant(sid, dead, ttl=600)  # it would block the session for ten minutes if it were waited out

    claude_env.script(Text("AFTER-THE-CRASH"))
    started = time.monotonic()
    done = place.flower("once", "--resume", sid, "go on")
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - started < 120
    assert "AFTER-THE-CRASH" in json.dumps(place.entries(sid))


def test_a_stalled_holder_taken_over_cannot_add_to_the_session(
    claude_env: ScriptedServer, place: Place, leftovers: list[subprocess.Popen[str]]
) -> None:
    sid = _manifest_sid_after(place, claude_env)
    # A's first request gets the slow tool; B (while A is stopped) its answer; A's harness, after the tool,
    # the last reply — which must never reach the store.
    claude_env.script(bash(SLOW_TOOL), Text("B-DROVE-IT"), Text("A-LATE-WORDS"))
    short = {"FLOWER_LEASE_TTL": "3"}
    a = place.start("once", "-t", "Bash", "--resume", sid, "run the slow step", env=short)
    leftovers.append(a)
    _wait_until(lambda: (place.workspace / "started").exists(), SETUP_S, "A's tool starts")
    os.kill(a.pid, signal.SIGSTOP)  # A stalls: no renewal from here on
    _wait_until(lambda: place.lease(sid) is None, 60, "A's lease expires")

    b = place.flower("once", "--resume", sid, "take over", env=short)
    assert b.returncode == 0, b.stderr
    before = place.entries(sid)

    os.kill(a.pid, signal.SIGCONT)
    (place.workspace / "go").touch()  # A's harness finishes the tool and asks the model again
    _, err = a.communicate(timeout=SETUP_S)
    assert a.returncode == 3, err
    line = _one_error_line(err)
    assert "taken over" in line and "epoch" in line, line

    after = place.entries(sid)
    text = json.dumps(after)
    assert "B-DROVE-IT" in text and "A-LATE-WORDS" not in text, "the stale holder added nothing"
    uuids = [e.get("uuid") for e in after if e.get("uuid")]
    assert len(uuids) == len(set(uuids)), "nothing is stored twice"
    assert after[: len(before)] == before
