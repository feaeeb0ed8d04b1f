"""What a `claude -p` user expects of the `flower` command's output, end to end: the real console script in a
subprocess, the real Claude Code binary, the scripted server.

-v shows the settings the run uses; an unreachable endpoint is said within seconds; the credential probe runs
once a day per endpoint and key; --json covers every command and its errors; a heartbeat while a tool runs;
Claude Code's own stderr goes to a log file under the run dir.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from harness import ScriptedServer, Text

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
