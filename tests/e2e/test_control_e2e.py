"""Talking to a run from another terminal, end to end: a real `flower go` (the real Claude Code binary against
the scripted server) in one process; `flower status / watch / answer / mail / stop` from other processes with
another working directory (`-w`) — and, against PostgreSQL, from "another machine" (another HOME, the store URL
only). The run takes each message from its store within a second; `flower` wakes it after the stop."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from e2e._runs import flower as _flower
from e2e._runs import tool_result_after as _tool_result
from fleet_helpers import BRIEF, CLARIFIER, LEAD, QUESTION

from harness import After, Hang, ScriptedServer, Text, ToolUse, keyed

pytestmark = pytest.mark.e2e


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "FLOWER_NO_UPDATE": "1", "FLOWER_NO_PROBE": "1", **extra}


def _until(what: str, check: Callable[[], Any], timeout_s: float = 180) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.2)


@pytest.fixture(params=["sqlite", "postgres"])
def where(request: pytest.FixtureRequest, tmp_path: Path, workspace: Path) -> dict[str, Any]:
    """How the run is started and how the other process reaches it: SQLite (-w the workspace, the same HOME) or
    PostgreSQL (--store, another HOME: another machine that shares only the server)."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    if request.param == "sqlite":
        return {"run": [], "other": ["-w", str(workspace)], "env": _env(), "cwd": elsewhere}
    url = request.getfixturevalue("pg_url")
    home = tmp_path / "other-home"
    home.mkdir()
    other_env = _env(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"))
    return {"run": ["--store", url], "other": ["--store", url], "env": other_env, "cwd": elsewhere}


def test_status_watch_answer_mail_stop_from_another_process_and_a_wake(
    claude_env: ScriptedServer, workspace: Path, where: dict[str, Any]
) -> None:
    mailed = threading.Event()
    claude_env.script(
        *keyed(
            CLARIFIER, ToolUse("mcp__human__ask", {"question": QUESTION, "options": ["English", "French"]}), Text(BRIEF)
        ),
        *keyed(
            LEAD,
            After(lambda s: mailed.is_set(), ToolUse("mcp__human__inbox", {}), timeout=240),
            Hang(),  # the coordinator works on (until it is stopped)
        ),
    )
    other, env, cwd = where["other"], where["env"], where["cwd"]

    def other_process(*args: str) -> subprocess.CompletedProcess[str]:
        return (
            _flower(*args[:1], *other, *args[1:], cwd=cwd, env=env)
            if args[0] == "--json"
            else _flower(*other, *args, cwd=cwd, env=env)
        )

    def mine(runs: list[dict[str, Any]]) -> dict[str, Any] | None:
        return next((r for r in runs if r["workspace"] == str(workspace.resolve())), None)

    def status() -> dict[str, Any] | None:
        done = other_process("--json", "status")
        if done.returncode == 2 and "nothing has run in this workspace yet" in done.stderr:
            return None  # the run has not opened its store yet
        if done.returncode != 0 and "nothing was ever written there" in done.stderr:
            return None  # the run has not created its PostgreSQL schema yet (a loaded machine starts it slowly)
        assert done.returncode == 0, done.stderr
        return mine(json.loads(done.stdout)["runs"])

    run = subprocess.Popen(
        [sys.executable, "-m", "flower_cli", *where["run"], "--no-goal", "build a greeter"],
        cwd=workspace,
        env=_env(),
        stdin=subprocess.PIPE,  # kept open: a question waits for its answer instead of falling through
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    watcher: subprocess.Popen[str] | None = None
    try:
        # status: it is waiting on the clarifier's question, with its step and context
        waiting = _until("the run waits on its question", lambda: (s := status()) and s["state"] == "waiting" and s)
        assert waiting["step"] == "clarify" and waiting["question"] == QUESTION and waiting["question_id"] == "q1"
        assert waiting["context"] > 0 and waiting["session"] and waiting["command"] == "go"
        run_id = waiting["run_id"]
        human = other_process("status")
        assert (
            human.returncode == 0 and run_id in human.stdout and "waiting" in human.stdout and QUESTION in human.stdout
        )

        # watch follows it (read-only) from here on, in its own process
        watcher = subprocess.Popen(
            [sys.executable, "-m", "flower_cli", "--json", *other, "watch", run_id],
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

        # answer: "2" picks the second option, as at the run's own terminal
        answered = other_process("--json", "answer", run_id, "2")
        assert answered.returncode == 0, answered.stderr
        assert json.loads(answered.stdout.splitlines()[-1])["ok"] is True
        _until("the clarifier got the answer", lambda: _tool_result(claude_env, "mcp__human__ask"))
        assert _tool_result(claude_env, "mcp__human__ask") == "The person answered:\nFrench"

        # status: the work step runs; mail reaches the coordinator (and its brief)
        working = _until(
            "the work step runs", lambda: (s := status()) and s["step"] == "work" and s["state"] == "running" and s
        )
        assert working["run_id"] == run_id
        mail = other_process("mail", "ALSO-EXPORT-CSV please")  # the one running run: no RUN needed
        assert mail.returncode == 0, mail.stderr
        assert "queued for the coordinator" in mail.stderr
        mailed.set()
        _until("the coordinator read its mail", lambda: _tool_result(claude_env, "mcp__human__inbox"))
        assert "ALSO-EXPORT-CSV please" in _tool_result(claude_env, "mcp__human__inbox")
        _until("the coordinator works on", lambda: sum(1 for r in claude_env.message_requests if LEAD(r)) >= 2)

        # stop: the run ends, its step recorded with who stopped it
        stopped = other_process("stop")
        assert stopped.returncode == 0, stopped.stderr
        out, err = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            run.kill()
            run.communicate()
    assert run.returncode == 1, err
    assert "stopped by" in err and "flower stop" in err and "to wake it" in err and "Traceback" not in err
    final = status()
    assert final is not None and final["state"] == "stopped" and "flower stop" in final["stopped_by"]
    assert watcher is not None
    watched, _ = watcher.communicate(timeout=60)
    assert watcher.returncode == 1, "watch ends with the run's outcome: stopped is not done"
    events = [json.loads(line) for line in watched.splitlines()]
    kinds = [e["kind"] for e in events]
    assert kinds[-2:] == ["done", "error"] and "stopped" in events[-1]["message"]
    assert [e["text"] for e in events if e["kind"] == "step"] == ["clarify", "work"]
    actions = [e["payload"]["action"] for e in events if e["kind"] == "control"]
    assert actions == ["answer", "mail", "stop"]
    qa = (workspace / ".flower" / "notes" / "qa-log.md").read_text()
    assert "**A** [answered by " in qa and "via flower answer] French" in qa
    assert "ALSO-EXPORT-CSV please" in (workspace / ".flower" / "notes" / "brief.md").read_text()
    if not where["run"]:
        rows = json.loads((workspace / "runs" / "manifest.json").read_text())
        assert rows[-1]["step"] == "work" and "flower stop" in rows[-1]["error"]

    # `flower` in the workspace wakes it: the same work session goes on
    claude_env.script(*keyed(LEAD, Text("Picked up after the stop. WOKE-AGAIN")))
    woke = _flower(*where["run"], "--no-goal", cwd=workspace, env=_env(), timeout=240)
    assert woke.returncode == 0, woke.stderr
    assert woke.stdout.strip() == "Picked up after the stop. WOKE-AGAIN"
    assert "Picking up where it stopped" in woke.stderr
