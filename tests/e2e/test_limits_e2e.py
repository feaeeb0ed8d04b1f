"""Usage limits end to end: the real `flower` command and Claude Code binary against a scripted server that
refuses every request for a window (429 with the unified rate-limit headers) and then serves again.

What is counted: the requests the server refused inside the window (``ScriptedServer.limited``). The harness
sends the first one before anyone knows of the limit; flower sends none after it, and the next request comes
within seconds of the reset, in the same session.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from flower_cli import CLARIFIER_RULES, COORDINATOR_RULES
from harness import (
    RecordedRequest,
    ScriptedServer,
    Text,
    bash,
    keyed,
    spend_capped,
    usage_limited,
    when_main,
    when_system,
)

pytestmark = pytest.mark.e2e

WINDOW_S = 20


def flower(*args: str, cwd: Path, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """The command as a user runs it: a fresh process, stdin not a terminal."""
    return subprocess.run(
        [sys.executable, "-m", "flower_cli", *args],
        cwd=cwd,
        env={**os.environ, "FLOWER_NO_UPDATE": "1", "FLOWER_NO_PROBE": "1"},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def manifest_rows(workspace: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = json.loads((workspace / "runs" / "manifest.json").read_text())
    return rows


def wall_time(request: RecordedRequest) -> float:
    """When the server received ``request``, as Unix time (it records the monotonic clock)."""
    return request.received_at + (time.time() - time.monotonic())


def after_the_window(api: ScriptedServer) -> list[RecordedRequest]:
    assert api.limit_ends is not None, "the scripted limit was never met"
    return [r for r in api.message_requests if wall_time(r) >= api.limit_ends - 0.05 and r.status == 200]


def lines_with(text: str, output: str) -> list[str]:
    return [line for line in output.splitlines() if text in line]


def test_once_waits_out_a_usage_limit_and_resumes_the_same_session(claude_env: ScriptedServer, workspace: Path) -> None:
    api = claude_env
    api.script(bash("echo first turn"), usage_limited(WINDOW_S), Text("Finished after the limit."))
    done = flower("once", "-t", "Bash", "do the work", cwd=workspace)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Finished after the limit.\n"
    # One line names the limit and the reset; the harness's own retry line is not shown for it.
    [said] = lines_with("usage limit reached; it resets at", done.stderr)
    assert "(in " in said and "waiting, no requests until then" in said
    assert "Claude Code retries it" not in done.stderr
    assert lines_with("resuming the same session", done.stderr)
    # Requests inside the window: the harness's first refused one only; none from flower.
    assert len(api.limited) == 1, [r.status for r in api.message_requests]
    resumed = after_the_window(api)[0]
    assert 0 <= wall_time(resumed) - api.limit_ends <= 3.0
    assert "echo first turn" in resumed.text, "the resumed request must carry the session's earlier turns"
    [row] = manifest_rows(workspace)
    assert row["ok"] is True and row["limits_waited"] == 1 and row["limited_until"] is None


def test_a_reset_beyond_the_limit_wait_ends_with_exit_5_and_a_wake_continues_the_session(
    claude_env: ScriptedServer, workspace: Path
) -> None:
    api = claude_env
    api.script(bash("echo before the limit"), usage_limited(6 * 3600))
    started = time.monotonic()
    done = flower("--limit-wait", "1m", "once", "-t", "Bash", "do the work", cwd=workspace)
    took = time.monotonic() - started
    assert done.returncode == 5, done.stderr
    assert took < 60, f"a 6 h reset with --limit-wait 1m must end at once, took {took:.0f} s"
    assert len(api.limited) == 1
    last = done.stderr.strip().splitlines()[-1]
    assert "usage limit" in last and re.search(r"\(in (6 h|5 h 5\d min)\)", last), last  # 6 h, less the run so far
    assert "limit wait (1 min" in last, last
    assert "continue after" in last and "once --resume" in last, last
    [row] = manifest_rows(workspace)
    assert row["ok"] is False and row["limited_until"] == pytest.approx(api.limit_ends, abs=25)
    session = row["session_id"]
    assert session and session in last
    # `flower doctor` shows the limit the run met at this endpoint, still in force.
    doctor = flower("doctor", cwd=workspace)
    assert "usage limit met on" in doctor.stderr and "still in force: it resets at" in doctor.stderr, doctor.stderr
    assert "(in 6 h" in doctor.stderr or "(in 5 h" in doctor.stderr

    # Later (the limit lifted): the command the line gave continues the same session.
    api.lift_limits()
    api.script(Text("Continued in the same session."))
    command = shlex.split(last.split("with: ", 1)[1])
    assert command[0] == "flower"
    again = flower(*command[1:], cwd=workspace)
    assert again.returncode == 0, again.stderr
    assert again.stdout == "Continued in the same session.\n"
    assert "echo before the limit" in api.message_requests[-1].text
    assert [r["session_id"] for r in manifest_rows(workspace)] == [session, session]


def test_a_spend_cap_ends_at_once_with_its_own_line_and_nothing_retried(
    claude_env: ScriptedServer, workspace: Path
) -> None:
    api = claude_env
    api.script(spend_capped(), Text("never sent"))
    done = flower("once", "do the work", cwd=workspace)
    assert done.returncode == 5, done.stderr
    assert len(api.message_requests) == 1, "a spend cap is not retried, by the harness or by flower"
    assert lines_with("spend limit reached", done.stderr)
    assert api.pending == 1


# --- flower go: the work round meets the limit --------------------------------------------------------------

CLARIFIER = when_system(CLARIFIER_RULES.splitlines()[0])
LEAD = when_system(COORDINATOR_RULES.splitlines()[0]) & when_main()
BRIEF = """## Goal
Build the greeter: a hello.txt that greets the reader.

## Acceptance criteria
- hello.txt exists and says hello

## Boundaries
- no web page

## Unknowns and assumptions
- none
"""


def json_events(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


def test_go_waits_out_a_usage_limit_in_its_work_round_with_json_limit_events(
    claude_env: ScriptedServer, workspace: Path
) -> None:
    api = claude_env
    api.script(
        *keyed(CLARIFIER, Text(BRIEF)),
        *keyed(LEAD, bash("echo greeting > hello.txt"), usage_limited(WINDOW_S), Text("Work done after the limit.")),
    )
    done = flower("--json", "--no-goal", "--timeout", "0", "build a greeter", cwd=workspace)
    assert done.returncode == 0, done.stderr
    events = json_events(done.stdout)
    limits = [e for e in events if e["kind"] == "limit"]
    phases = [e["payload"]["phase"] for e in limits]
    assert phases[0] == "reached" and phases[-1] == "resumed", phases
    reached = limits[0]["payload"]
    assert reached["step"] == "work" and reached["resets_at"] == pytest.approx(api.limit_ends, abs=2)
    assert events[-1]["kind"] == "done" and events[-1]["text"] == "Work done after the limit."
    assert len(api.limited) == 1
    resumed = after_the_window(api)[0]
    assert LEAD(resumed) and 0 <= wall_time(resumed) - api.limit_ends <= 3.0
    assert "echo greeting > hello.txt" in resumed.text
    [work] = [r for r in manifest_rows(workspace) if r["step"] == "work"]
    assert work["ok"] is True and work["limits_waited"] == 1


def test_go_stopped_by_a_far_reset_exits_5_and_the_wake_continues_the_work_session(
    claude_env: ScriptedServer, workspace: Path
) -> None:
    api = claude_env
    api.script(
        *keyed(CLARIFIER, Text(BRIEF)),
        *keyed(LEAD, bash("echo BEFORE-THE-LIMIT"), usage_limited(6 * 3600, claim="seven_day")),
    )
    done = flower("--limit-wait", "0", "--no-goal", "--timeout", "0", "build a greeter", cwd=workspace)
    assert done.returncode == 5, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert "stopped at step 'work'" in last and "never wait" in last, last
    assert "continue after" in last and f"with: flower -w {workspace}" in last, last
    [work] = [r for r in manifest_rows(workspace) if r["step"] == "work"]
    assert work["limited_until"] == pytest.approx(api.limit_ends, abs=25)

    api.lift_limits()
    api.script(*keyed(LEAD, Text("Picked up after the limit. WOKE")))
    woke = flower("--no-goal", "--timeout", "0", cwd=workspace)
    assert woke.returncode == 0, woke.stderr
    assert woke.stdout.strip() == "Picked up after the limit. WOKE"
    resumed = [r for r in api.message_requests if LEAD(r)][-1]
    assert "BEFORE-THE-LIMIT" in resumed.text, "the wake continues the work session"
    works = [r for r in manifest_rows(workspace) if r["step"] == "work"]
    assert len({r["session_id"] for r in works}) == 1
