"""The first hour's small fixes (issue 32), each through the real `flower` command and, where a model call is
involved, the real Claude Code binary against the scripted server: ``--model`` reaching the request, an
unknown model's exit 3 in one line, doctor's two problems, a ``--store`` in a missing folder, a moved
project's sessions, and a bare ``flower`` without a terminal that creates nothing before it refuses."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from e2e._runs import flower as run_flower

from harness import ApiError, ScriptedServer, Text

pytestmark = pytest.mark.e2e

UNKNOWN_MODEL_WORDS = "issue with the selected model"


def flower(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The command as a user runs it: a fresh process, stdin not a terminal."""
    return run_flower(
        *args, cwd=cwd, env={**os.environ, "FLOWER_NO_UPDATE": "1", "FLOWER_NO_PROBE": "1", **(env or {})}
    )


def last_line(text: str) -> str:
    return text.strip().splitlines()[-1]


# --- --model ----------------------------------------------------------------------------------------------


def test_model_reaches_every_request_of_the_run(claude_env: ScriptedServer, workspace: Path) -> None:
    claude_env.script(Text("Answered by the chosen model."))
    done = flower("once", "--model", "claude-chosen-1", "which model are you?", cwd=workspace)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Answered by the chosen model."
    models = {request.json.get("model") for request in claude_env.message_requests}
    assert models == {"claude-chosen-1"}, models


@pytest.mark.parametrize("command", ["go", "run"])
def test_go_and_run_take_model_too(claude_env: ScriptedServer, workspace: Path, command: str) -> None:
    # A bad --model value is refused before anything runs, which shows the option is there (not "no such option").
    done = flower(command, "--model", "two words", "x.py:main" if command == "run" else "build it", cwd=workspace)
    assert done.returncode == 2, done.stderr
    assert "--model takes one model name" in last_line(done.stderr)
    assert claude_env.message_requests == []


def test_an_unknown_model_exits_3_and_says_it_once(claude_env: ScriptedServer, workspace: Path) -> None:
    claude_env.script(*[ApiError(404, "not_found_error", "model: claude-nope") for _ in range(4)])
    done = flower("once", "--model", "claude-nope", "hi", cwd=workspace)
    assert done.returncode == 3, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.count(UNKNOWN_MODEL_WORDS) <= 1, done.stderr  # the step's own line, not four times
    closing = last_line(done.stderr)
    assert "the model claude-nope does not exist" in closing and "--model" in closing, closing
    assert len(claude_env.message_requests) <= 2, "a missing model is not retried"


# --- doctor -----------------------------------------------------------------------------------------------


def test_doctor_counts_ignored_env_lines_as_a_problem(claude_env: ScriptedServer, workspace: Path) -> None:
    (workspace / ".env").write_text("FLOWER_WINDOW=300k\nthis line is not a setting\n", encoding="utf-8")
    done = flower("doctor", cwd=workspace)
    assert done.returncode == 3, done.stderr
    assert "all good" not in done.stderr
    closing = last_line(done.stderr)
    assert "doctor found problems" in closing and "line 2 is not KEY=VALUE" in closing, closing


def test_doctor_finds_a_run_dir_it_cannot_write(claude_env: ScriptedServer, workspace: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder\n")
    done = flower("-r", str(blocker / "runs"), "doctor", cwd=workspace)
    assert done.returncode == 3, done.stderr
    assert "all good" not in done.stderr
    closing = last_line(done.stderr)
    assert "the run dir" in closing and "is a file, not a directory" in closing and "-r" in closing, closing
    assert blocker.read_text() == "not a folder\n" and not list(tmp_path.glob(".flower-doctor-*"))


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder: no way to see the refusal")
def test_doctor_finds_a_read_only_run_dir(claude_env: ScriptedServer, workspace: Path) -> None:
    runs = workspace / "runs"
    runs.mkdir(mode=0o700)
    runs.chmod(0o500)
    try:
        done = flower("doctor", cwd=workspace)
    finally:
        runs.chmod(0o700)
    assert done.returncode == 3, done.stderr
    assert "no permission to write the run dir" in last_line(done.stderr)


def test_doctor_passes_a_writable_run_dir_and_leaves_nothing(claude_env: ScriptedServer, workspace: Path) -> None:
    done = flower("doctor", cwd=workspace)
    assert done.returncode == 0, done.stderr
    assert "all good" in done.stderr
    assert list(workspace.iterdir()) == [], "doctor looks; it creates nothing"


# --- --store in a folder that does not exist -----------------------------------------------------------


def test_a_store_in_a_missing_folder_is_refused_like_a_missing_workspace(
    claude_env: ScriptedServer, workspace: Path, tmp_path: Path
) -> None:
    missing = tmp_path / "no" / "such" / "dir"
    done = flower("--store", f"sqlite:///{missing}/x.db", "once", "hi", cwd=workspace)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "does not exist (nothing was created)" in lines[0] and "mkdir -p" in lines[0], lines
    assert not (tmp_path / "no").exists() and claude_env.requests == []
    assert list(workspace.iterdir()) == []


# --- a moved project ------------------------------------------------------------------------------------


def test_sessions_of_a_moved_project_are_found_under_the_old_path(claude_env: ScriptedServer, tmp_path: Path) -> None:
    old = tmp_path / "before-the-move"
    old.mkdir()
    claude_env.script(Text("Ran before the move."))
    assert flower("once", "a question", cwd=old).returncode == 0
    [row] = json.loads((old / "runs" / "manifest.json").read_text())
    new = tmp_path / "after-the-move"
    shutil.move(old, new)  # the run dir moves with it; the harness filed the session under the old path

    listed = flower("sessions", cwd=new)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout == ""
    said = " ".join(listed.stderr.split())
    assert f"no sessions for {new}" in said
    assert f"it holds sessions of other paths: {old} (1 session)" in said and "`flower sessions --all`" in said

    every = flower("sessions", "--all", cwd=new)
    assert every.returncode == 0, every.stderr
    assert row["session_id"] in every.stdout and str(old) in every.stdout

    as_json = json.loads(flower("--json", "sessions", cwd=new).stdout)
    assert as_json["sessions"] == [] and as_json["elsewhere"][0]["path"] == str(old)


# --- bare flower without a terminal -------------------------------------------------------------------------


def test_bare_flower_without_a_terminal_refuses_and_creates_nothing(
    claude_env: ScriptedServer, workspace: Path
) -> None:
    done = flower(cwd=workspace)
    assert done.returncode == 2, done.stderr
    assert "say what to build" in last_line(done.stderr)
    assert list(workspace.iterdir()) == [], "nothing is created before the refusal"
    assert claude_env.requests == []
