"""`flower --store postgresql://…`: a run written on one machine continues on another, end to end.

Two "machines" are two processes with different HOMEs (no shared ~/.claude) and different run dirs (no shared
sessions.db or manifest); what they share is the PostgreSQL server and the workspace path (the SDK keys
sessions by the workspace's path). Real binary, scripted Messages API server, real PostgreSQL.
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

from harness import ScriptedServer, Text

pytestmark = pytest.mark.e2e


def flower(
    *args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 240
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flower_cli", *args],
        cwd=cwd,
        env={**os.environ, "FLOWER_NO_UPDATE": "1", **(env or {})},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _machine(tmp_path: Path, name: str) -> dict[str, str]:
    home = tmp_path / f"home-{name}"
    home.mkdir()
    return {"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}


def test_a_session_written_on_one_machine_is_resumed_on_another(
    claude_env: ScriptedServer, pg_url: str, tmp_path: Path
) -> None:
    workspace = tmp_path / f"ws-{time.time_ns()}"  # the shared project path; unique, so its project key is too
    workspace.mkdir()
    machine_a, machine_b = _machine(tmp_path, "a"), _machine(tmp_path, "b")

    claude_env.script(Text("First answer: remember the word PAPAYA."))
    first = flower(
        "--store", pg_url, "-r", str(tmp_path / "runs-a"), "once", "remember a word", cwd=workspace, env=machine_a
    )
    assert first.returncode == 0, first.stderr
    [row] = json.loads((tmp_path / "runs-a" / "manifest.json").read_text())
    sid = row["session_id"]
    assert not (tmp_path / "runs-a" / "sessions.db").exists(), "with --store the transcript goes to the server only"
    assert list(Path(machine_a["HOME"]).glob(".claude/projects/*/*.jsonl")), "machine A's harness kept its local copy"

    # Machine B: another HOME (no local transcript anywhere), another run dir, the store URL from the environment.
    env_b = {**machine_b, "FLOWER_STORE_URL": pg_url}
    listed = flower("-r", str(tmp_path / "runs-b"), "sessions", cwd=workspace, env=env_b)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.split()[0] == sid

    claude_env.script(Text("It was PAPAYA."))
    second = flower("-r", str(tmp_path / "runs-b"), "once", "--resume", sid, "which word?", cwd=workspace, env=env_b)
    assert second.returncode == 0, second.stderr
    assert second.stdout.strip() == "It was PAPAYA."
    assert "remember the word PAPAYA" in claude_env.message_requests[-1].text, (
        "the resumed request carries machine A's conversation"
    )
    [row_b] = json.loads((tmp_path / "runs-b" / "manifest.json").read_text())
    assert row_b["session_id"] == sid and row_b["ok"] is True

    doctor = flower("-r", str(tmp_path / "runs-b"), "doctor", "--no-probe", cwd=workspace, env=env_b)
    assert doctor.returncode == 0, doctor.stderr
    assert "(schema flower):" in doctor.stderr and " transcripts, " in doctor.stderr
    secret = pg_url.split("@")[0].rsplit(":", 1)[-1]
    assert secret not in doctor.stderr + second.stderr + first.stderr, "the password is never printed"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("command", [["once", "hi"], ["doctor", "--no-probe"], ["sessions"]])
def test_a_refused_connection_is_exit_3_with_the_fix(
    claude_env: ScriptedServer, workspace: Path, command: list[str]
) -> None:
    url = f"postgresql://flower:pw-not-shown@127.0.0.1:{_closed_port()}/flower"
    done = flower("--store", url, *command, cwd=workspace)
    assert done.returncode == 3, done.stderr
    assert "Traceback" not in done.stderr and "pw-not-shown" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert "127.0.0.1" in last and "check that the server is running" in last and "--store / FLOWER_STORE_URL" in last
    assert claude_env.message_requests == [], "nothing ran"


@pytest.mark.parametrize("url", ["mysql://db.example/flower", "postgresql://host:notaport/db", "sqlite://"])
def test_a_malformed_store_url_is_exit_2(claude_env: ScriptedServer, workspace: Path, url: str) -> None:
    done = flower("--store", url, "once", "hi", cwd=workspace)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert "sqlite:///abs/path/sessions.db" in done.stderr and "postgresql://" in done.stderr


def test_without_the_postgres_extra_the_cli_says_what_to_install(claude_env: ScriptedServer, workspace: Path) -> None:
    # The real CLI in a real process in which psycopg cannot be imported (as after `pip install flower-cli`).
    script = "import sys; sys.modules['psycopg'] = None; sys.modules['psycopg_pool'] = None; from flower_cli.cli import main; sys.exit(main(sys.argv[1:]))"
    done = subprocess.run(
        [sys.executable, "-c", script, "--store", "postgresql://flower@127.0.0.1:5432/flower", "once", "hi"],
        cwd=workspace,
        env={**os.environ, "FLOWER_NO_UPDATE": "1"},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 3, done.stderr
    assert done.stderr.strip().splitlines()[-1].endswith("pip install 'flower-stores[postgres]'")
    assert "Traceback" not in done.stderr


def test_a_sqlite_url_is_the_same_as_the_default_store(
    claude_env: ScriptedServer, workspace: Path, tmp_path: Path
) -> None:
    db = tmp_path / "elsewhere" / "sessions.db"
    db.parent.mkdir()  # a --store in a folder that does not exist is refused, like a missing -w
    claude_env.script(Text("stored elsewhere"))
    done = flower("--store", f"sqlite://{db}", "once", "hi", cwd=workspace)
    assert done.returncode == 0, done.stderr
    assert db.is_file() and not (workspace / "runs" / "sessions.db").exists()
