"""What a `claude -p` user expects of the `flower` command's output, end to end: the real console script in a
subprocess, the real Claude Code binary, the scripted server.

-v shows the settings the run uses; an unreachable endpoint is said within seconds; the credential probe runs
once a day per endpoint and key; --json covers every command and its errors; a heartbeat while a tool runs;
Claude Code's own stderr goes to a log file under the run dir.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness import ScriptedServer, Text, bash, unauthorized

pytestmark = pytest.mark.e2e

FLOWER = Path(sys.executable).with_name("flower")


def flower(
    *args: str, cwd: Path, timeout: float = 240, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The console script as a user runs it: a fresh process, stdin not a terminal."""
    return subprocess.run(
        [str(FLOWER), *args],
        cwd=cwd,
        env={**os.environ, "FLOWER_NO_UPDATE": "1", **(env or {})},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# --- 1. -v shows the settings as the run uses them ----------------------------------------------------------


def test_verbose_shows_the_settings_from_the_dotenv_the_run_uses(
    claude_env: ScriptedServer, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The endpoint and the key come only from ./.env: shown before loading, they read "(default)" and nothing.
    (workspace / ".env").write_text(f"ANTHROPIC_BASE_URL={claude_env.url}\nANTHROPIC_API_KEY=sk-ant-from-dotenv-1234\n")
    monkeypatch.delenv("ANTHROPIC_BASE_URL")
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    claude_env.script(Text("done"))
    done = flower("-v", "once", "hi", cwd=workspace)
    assert done.returncode == 0, done.stderr
    dotenv = str(workspace / ".env")
    shown = " ".join(done.stderr.split())  # long lines wrap at the width
    assert f"ANTHROPIC_BASE_URL = {claude_env.url} ({dotenv})" in shown
    assert f"ANTHROPIC_API_KEY = sk-a…(23 chars) ({dotenv})" in shown
    assert "(default)" not in done.stderr and "sk-ant-from-dotenv" not in done.stderr
    assert claude_env.message_requests, "the run used the .env's endpoint"


# --- 5. colour: --color, NO_COLOR, FORCE_COLOR ---------------------------------------------------------------


def _stderr_on_a_terminal(*args: str, cwd: Path, env: dict[str, str]) -> tuple[int, str]:
    """Run flower with stderr on a pseudo-terminal (stdout piped); what the terminal showed."""
    master, slave = os.openpty()
    try:
        proc = subprocess.Popen(
            [str(FLOWER), *args],
            cwd=cwd,
            env={**os.environ, "FLOWER_NO_UPDATE": "1", **env},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=slave,
        )
        os.close(slave)
        shown = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            shown += chunk
        return proc.wait(timeout=60), shown.decode("utf-8", "replace")
    finally:
        os.close(master)


@pytest.mark.parametrize(
    ("args", "env", "coloured"),
    [
        ((), {}, False),  # a pipe: no colour
        (("--color", "always"), {}, True),
        ((), {"FORCE_COLOR": "1"}, True),
        (("--color", "never"), {"FORCE_COLOR": "1"}, False),
    ],
)
def test_colour_into_a_pipe(
    claude_env: ScriptedServer, workspace: Path, args: tuple[str, ...], env: dict[str, str], coloured: bool
) -> None:
    done = flower(*args, "doctor", "--no-probe", cwd=workspace, env=env)
    assert done.returncode == 0, done.stderr
    assert ("\x1b[" in done.stderr) is coloured, done.stderr
    assert "\x1b[" not in done.stdout


@pytest.mark.parametrize(
    ("args", "env", "coloured"),
    [
        ((), {}, True),  # auto on a terminal
        ((), {"NO_COLOR": "1"}, False),
        (("doctor", "--color", "never"), {}, False),  # a global option after the command works too
        (("--color", "always"), {"NO_COLOR": "1"}, True),
    ],
)
def test_colour_on_a_terminal(
    claude_env: ScriptedServer, workspace: Path, args: tuple[str, ...], env: dict[str, str], coloured: bool
) -> None:
    command = args if args and args[0] == "doctor" else (*args, "doctor")
    code, shown = _stderr_on_a_terminal(*command, "--no-probe", cwd=workspace, env=env)
    assert code == 0, shown
    assert "settings" in shown
    assert ("\x1b[" in shown) is coloured, shown


# --- 3. the live credential probe: setup, doctor, and the first run per endpoint and key per day --------------


def _on_a_terminal_stdin(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """stdin a pseudo-terminal (a person at the keyboard, so the probe may run), stdout and stderr captured."""
    master, slave = os.openpty()
    try:
        return subprocess.run(
            [str(FLOWER), *args],
            cwd=cwd,
            env={**os.environ, "FLOWER_NO_UPDATE": "1", **(env or {})},
            stdin=slave,
            capture_output=True,
            text=True,
            timeout=240,
        )
    finally:
        os.close(slave)
        os.close(master)


def _probes(server: ScriptedServer) -> int:
    """The probe's requests: not streamed, max_tokens 16 (Claude Code streams every request it makes)."""
    return sum(
        1
        for r in server.message_requests
        if isinstance(r.json, dict) and not r.json.get("stream") and r.json.get("max_tokens") == 16
    )


def test_the_probe_runs_once_a_day_per_endpoint_and_key(
    claude_env: ScriptedServer, workspace: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    claude_env.script(Text("probe ok"), Text("first answer"))
    first = _on_a_terminal_stdin("-v", "once", "hi", cwd=workspace)
    assert first.returncode == 0, first.stderr
    assert first.stdout == "first answer\n" and _probes(claude_env) == 1
    probed = isolated_home / ".config" / "flower" / ".probed"
    assert probed.is_file() and "sk-ant-test" not in probed.read_text()

    claude_env.script(Text("second answer"))
    second = _on_a_terminal_stdin("-v", "once", "again", cwd=workspace)
    assert second.returncode == 0, second.stderr
    assert second.stdout == "second answer\n" and _probes(claude_env) == 1, "not probed again the same day"
    assert "checked earlier today" in second.stderr

    # doctor always probes (that is what it is for)
    claude_env.script(Text("probe ok"))
    assert _on_a_terminal_stdin("doctor", cwd=workspace).returncode == 0
    assert _probes(claude_env) == 2

    # another key is another credential: probed again
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-1111111111111111")
    claude_env.script(Text("probe ok"), Text("third answer"))
    third = _on_a_terminal_stdin("once", "hi", cwd=workspace)
    assert third.returncode == 0 and _probes(claude_env) == 3, third.stderr


def test_a_401_after_the_days_probe_still_stops_at_once_with_exit_3(
    claude_env: ScriptedServer, workspace: Path
) -> None:
    claude_env.script(Text("probe ok"), Text("answer"))
    assert _on_a_terminal_stdin("once", "hi", cwd=workspace).returncode == 0
    claude_env.script(unauthorized())  # the key was revoked since: no probe today, the run's request finds out
    started = time.monotonic()
    done = _on_a_terminal_stdin("once", "again", cwd=workspace)
    assert done.returncode == 3, done.stderr
    assert time.monotonic() - started < 60 and _probes(claude_env) == 1


# --- 6. --json: every command, errors included ----------------------------------------------------------------


def _json_lines(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def test_json_errors_are_one_object_on_stdout_with_the_exit_code(claude_env: ScriptedServer, workspace: Path) -> None:
    usage = flower("--json", "once", "--bogus", "hi", cwd=workspace)
    assert usage.returncode == 2
    [error] = _json_lines(usage.stdout)
    assert error == {"kind": "error", "exit": 2, "message": usage.stderr.strip()}

    claude_env.script(unauthorized())
    failed = flower("--json", "once", "hi", cwd=workspace)
    assert failed.returncode == 3, failed.stderr
    events = _json_lines(failed.stdout)
    assert events[-2]["kind"] == "done" and events[-2]["ok"] is False
    assert events[-1]["kind"] == "error" and events[-1]["exit"] == 3 and events[-1]["message"]
    assert sum(1 for e in events if "exit" in e) == 1, "the command's own end is the only object with an exit"

    missing = flower("--json", "analyze", str(workspace / "nowhere"), cwd=workspace)
    assert missing.returncode == 2
    assert _json_lines(missing.stdout) == [{"kind": "error", "exit": 2, "message": missing.stderr.strip()}]


def test_json_sessions_show_and_doctor(claude_env: ScriptedServer, workspace: Path) -> None:
    claude_env.script(Text("The answer is 42."))
    assert flower("once", "what is the answer?", cwd=workspace).returncode == 0

    listed = flower("--json", "sessions", cwd=workspace)
    assert listed.returncode == 0, listed.stderr
    [document] = _json_lines(listed.stdout)
    assert document["kind"] == "sessions" and document["workspace"] == str(workspace.resolve())
    [session] = document["sessions"]
    assert session["step"] == "ad-hoc" and session["cost_usd"] > 0 and session["session_id"]

    shown = flower("--json", "sessions", "show", session["session_id"], cwd=workspace)
    assert shown.returncode == 0, shown.stderr
    [transcript] = _json_lines(shown.stdout)
    assert transcript["kind"] == "session" and transcript["session_id"] == session["session_id"]
    texts = [(m["type"], m["text"]) for m in transcript["messages"]]
    assert ("user", "what is the answer?") in texts and ("assistant", "The answer is 42.") in texts
    assert all(m["worker"] is None for m in transcript["messages"])

    doctor = flower("--json", "doctor", "--no-probe", cwd=workspace)
    assert doctor.returncode == 0, doctor.stderr
    [report] = _json_lines(doctor.stdout)
    assert report["kind"] == "doctor" and report["ok"] is True and report["problems"] == []
    assert {"key": "ANTHROPIC_BASE_URL", "value": claude_env.url, "source": "process environment"} in report["settings"]
    assert report["endpoint"]["reachable"] is True and report["store"]["transcripts"] >= 1
    assert "sk-ant-test-0000" not in doctor.stdout, "secrets stay masked"
    assert doctor.stderr == "", "with --json the findings are the document, not lines on stderr"


def test_json_doctor_with_a_problem_and_json_setup(
    claude_env: ScriptedServer, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{closed_port()}")
    done = flower("--json", "doctor", "--no-probe", cwd=workspace)
    assert done.returncode == 4
    report, error = _json_lines(done.stdout)
    assert report["ok"] is False and report["endpoint"] == {
        "host": "127.0.0.1",
        "port": report["endpoint"]["port"],
        "reachable": False,
        "error": "connection refused",
    }
    assert error["kind"] == "error" and error["exit"] == 4 and "not reachable" in error["message"]

    saved = flower("--json", "setup", "--token", "gw-token-123", cwd=workspace)
    assert saved.returncode == 0, saved.stderr
    [result] = _json_lines(saved.stdout)
    assert result["kind"] == "setup" and result["saved"].endswith("/flower/.env") and result["probe"] is None


# --- 2. an unreachable endpoint is said within 5 s, with or without a terminal -----------------------------------


def _first_lines(proc: subprocess.Popen[str], stream: str, want: str, deadline_s: float) -> tuple[str, float]:
    """Read ``stream`` of ``proc`` line by line until a line contains ``want`` or the deadline passes."""
    import selectors

    pipe = getattr(proc, stream)
    assert pipe is not None
    os.set_blocking(pipe.fileno(), False)
    selector = selectors.DefaultSelector()
    selector.register(pipe, selectors.EVENT_READ)
    started, seen = time.monotonic(), ""
    while time.monotonic() - started < deadline_s:
        for _ in selector.select(timeout=0.1):
            chunk = os.read(pipe.fileno(), 65536).decode("utf-8", "replace")
            seen += chunk
            for line in seen.splitlines():
                if want in line:
                    return line, time.monotonic() - started
    return seen, time.monotonic() - started


def _start(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    environ = {**os.environ, "FLOWER_NO_UPDATE": "1", **env}
    environ.pop("COLUMNS", None)  # into a pipe a message is one line
    return subprocess.Popen(
        [str(FLOWER), *args],
        cwd=cwd,
        env=environ,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_a_closed_port_is_said_within_5_seconds_without_a_terminal(claude_env: ScriptedServer, workspace: Path) -> None:
    port = closed_port()
    proc = _start("once", "hi", cwd=workspace, env={"ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}"})
    try:
        line, took = _first_lines(proc, "stderr", "cannot reach", 5.0)
    finally:
        proc.kill()
        proc.wait()
    assert took < 5.0, f"nothing said within 5 s: {line!r}"
    for fragment in (
        f"127.0.0.1:{port}",  # what was tried
        "connection refused",  # the error
        f"ANTHROPIC_BASE_URL=http://127.0.0.1:{port} (from process environment)",  # where it came from
        "`flower doctor`",
        "waiting up to 60 min",  # how long it will wait
        "Ctrl-C stops",
    ):
        assert fragment in line, (fragment, line)
    assert claude_env.message_requests == [], "nothing is sent into a closed port"


def test_the_run_starts_when_the_endpoint_comes_back(claude_env: ScriptedServer, workspace: Path) -> None:
    port = closed_port()
    proc = _start("--json", "once", "hi", cwd=workspace, env={"ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}"})
    try:
        notice, took = _first_lines(proc, "stdout", '"offline": true', 5.0)
        assert took < 5.0, notice
        event = json.loads(notice)
        assert event["kind"] == "notice" and event["payload"]["port"] == port and event["payload"]["wait_s"] == 3600
        with ScriptedServer(port=port) as back:
            back.script(Text("back again"))
            out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert f"127.0.0.1:{port} answers again; starting" in err
    assert json.loads(out.splitlines()[-1])["text"] == "back again"


# --- 7. a heartbeat while a tool runs ---------------------------------------------------------------------------

SLOW = 'python3 -c "import time; time.sleep(5)"'  # the harness refuses a bare `sleep N`


def test_a_heartbeat_on_a_terminal_while_a_tool_runs(claude_env: ScriptedServer, workspace: Path) -> None:
    claude_env.script(bash(SLOW), Text("slept"))
    code, shown = _stderr_on_a_terminal("once", "-t", "Bash", "wait a bit", cwd=workspace, env={})
    assert code == 0, shown
    beats = [part for part in shown.split("\r\x1b[K") if "running Bash" in part and "…" in part]
    assert beats, shown
    assert all("\n" not in beat.split("\x1b[0m")[0] for beat in beats), "drawn in place, never as a new line"
    assert any("· 0:0" in beat for beat in beats), "with the tool's elapsed time"
    assert len(beats) <= 4, "at most one redraw every couple of seconds"
    assert "+ done" in shown


def test_no_heartbeat_into_a_pipe_for_a_short_wait(claude_env: ScriptedServer, workspace: Path) -> None:
    claude_env.script(bash(SLOW), Text("slept"))
    done = flower("once", "-t", "Bash", "wait a bit", cwd=workspace)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "slept\n", "stdout holds the answer only"
    assert "\r" not in done.stderr and "running Bash" not in done.stderr


# --- 8. Claude Code's own diagnostics go to a log file under the run dir -----------------------------------------


def test_claude_codes_stderr_goes_to_the_run_dirs_harness_log(claude_env: ScriptedServer, workspace: Path) -> None:
    # Bun's verbose fetch logging makes the real binary write every request to its stderr (headers included).
    claude_env.script(Text("logged"))
    done = flower("once", "hi", cwd=workspace, env={"BUN_CONFIG_VERBOSE_FETCH": "curl"})
    assert done.returncode == 0, done.stderr
    log = workspace / "runs" / "harness.log"
    assert log.is_file() and (log.stat().st_mode & 0o777) == 0o600, "it may hold request headers"
    text = log.read_text()
    assert text.startswith("--- ") and "/v1/messages" in text
    assert "/v1/messages" not in done.stderr, "the terminal no longer gets the harness's own output"
    pointer = [line for line in done.stderr.splitlines() if "of its own diagnostics" in line]
    assert len(pointer) == 1 and str(log) in pointer[0]

    claude_env.script(Text("quiet"))
    quiet = flower("--json", "once", "hi", cwd=workspace)
    assert quiet.returncode == 0, quiet.stderr
    assert "diagnostics" not in quiet.stderr, "nothing said when the harness said nothing"
    assert json.loads(quiet.stdout.splitlines()[-1])["harness_log"] is None
