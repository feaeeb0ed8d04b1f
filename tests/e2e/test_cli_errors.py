"""Mistakes and broken surroundings, as a user meets them: the real `flower` console script in a subprocess.

Every case ends with one line on stderr that says what is wrong and what to do, the documented exit code
(2 usage, 3 credentials/configuration/the machine), no traceback, and nothing already written lost.
Full and read-only disks are real tmpfs mounts (skipped where this process may not mount).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from harness import ScriptedServer, Text

pytestmark = pytest.mark.e2e

# The console script pip made for flower-cli's [project.scripts], next to this interpreter: what users run.
FLOWER = Path(sys.executable).with_name("flower")


def flower(*args: str, cwd: Path, timeout: float = 240, stdout: int | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "FLOWER_NO_UPDATE": "1"}
    return subprocess.run(
        [str(FLOWER), *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE if stdout is None else stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=timeout,
    )


def one_line_error(
    done: subprocess.CompletedProcess[str], code: int, *fragments: str, after_progress: bool = False
) -> str:
    """The error line of a failed command, checked for the exit code, no traceback and ``fragments``.

    Before any work it is the only line on stderr; ``after_progress``: the last one, after the run's progress.
    """
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == code, done.stderr
    assert "Traceback" not in done.stderr
    assert lines, "no error line"
    if not after_progress:
        assert len(lines) == 1, f"expected one line on stderr, got:\n{done.stderr}"
    for fragment in fragments:  # case aside: typer versions spell an argument "prompt" or "PROMPT"
        assert fragment.lower() in lines[-1].lower(), lines[-1]
    return lines[-1]


def test_the_console_script_is_the_one_tested() -> None:
    assert FLOWER.is_file() and os.access(FLOWER, os.X_OK), f"no console script at {FLOWER}"


# --- usage errors: exit 2, one line naming the problem and pointing at --help ---------------------------


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["once", "--bogus", "hi"], ["No such option: --bogus", "flower once --help"]),
        (["once", "--budge", "3", "hi"], ["--budge", "--budget", "flower once --help"]),
        # no PROMPT and nothing on stdin (an empty pipe): the prompt would come from stdin, and it is empty
        (["once"], ["the prompt from stdin is empty", 'flower once "summarise README.md"']),
        (["once", "-b", "lots", "hi"], ["--budget", "flower once --help"]),
        (["once", "-p", "yolo", "hi"], ["--permission-mode", "yolo", "flower once --help"]),
        (["run"], ["Missing argument", "target", "flower run --help"]),
        (["once", "--window", "lots", "hi"], ["--window", "'lots' is not a token count", "200k"]),
        (["once", "--window", "0", "hi"], ["--window", "'0' is not a positive whole number"]),
        (["run", "--window", "200k", "--no-handoff", "flows.py:main"], ["--window", "--no-handoff"]),
        (["sessions", "bogus"], ["No such command", "bogus", "flower sessions --help"]),
        (["sessions", "show"], ["Missing argument", "flower sessions show --help"]),
        (["doctor", "--probe"], ["No such option: --probe", "flower doctor --help"]),
        (["once", "hi", "-w"], ["-w", "requires an argument", "flower --help"]),
        (["--json", "setup", "--token"], ["--token", "requires an argument", "flower setup --help"]),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(
    isolated_home: Path, workspace: Path, args: list[str], fragments: list[str]
) -> None:
    done = flower(*args, cwd=workspace, timeout=60)
    line = one_line_error(done, 2, *fragments)
    if "--json" in args:  # a program reading stdout gets the same error as one JSON object
        assert [json.loads(out) for out in done.stdout.splitlines()] == [{"kind": "error", "exit": 2, "message": line}]
    else:
        assert done.stdout == ""
    assert not (workspace / "runs").exists(), "a usage error must not touch the run dir"


def test_help_still_works_and_exits_0(isolated_home: Path, workspace: Path) -> None:
    done = flower("once", "--help", cwd=workspace, timeout=60)
    assert done.returncode == 0 and "--budget" in done.stdout and done.stderr == ""


# --- the run dir and its store ---------------------------------------------------------------------------


def test_a_stray_file_as_sessions_db_is_refused_and_left_as_it_is(claude_env: ScriptedServer, workspace: Path) -> None:
    db = workspace / "runs" / "sessions.db"
    db.parent.mkdir()
    db.write_bytes(b"notes I saved under the wrong name\n")
    done = flower("once", "hi", cwd=workspace)
    one_line_error(done, 3, str(db), "not a usable SQLite database", "Move it away", "-r")
    assert db.read_bytes() == b"notes I saved under the wrong name\n"
    assert claude_env.message_requests == [], "nothing may run (and cost) on a store that cannot keep it"
    listed = flower("sessions", cwd=workspace)
    one_line_error(listed, 3, str(db), "not a usable SQLite database")
    (workspace / "flows.py").write_text(
        "from flower_cli import AgentSpec, Step, Workflow\nmain = Workflow([Step('only', AgentSpec('a', 'x'), 'go')])\n"
    )
    ran = flower("run", "flows.py:main", cwd=workspace)
    one_line_error(ran, 3, str(db), "not a usable SQLite database")
    checked = flower("doctor", "--no-probe", cwd=workspace)
    assert checked.returncode == 3 and "Traceback" not in checked.stderr and str(db) in checked.stderr.splitlines()[-1]
    assert db.read_bytes() == b"notes I saved under the wrong name\n"
    assert claude_env.message_requests == []


def test_a_half_copied_sessions_db_is_refused_and_nothing_written_is_lost(
    claude_env: ScriptedServer, workspace: Path
) -> None:
    claude_env.script(Text("first answer"))
    assert flower("once", "first", cwd=workspace).returncode == 0
    runs = workspace / "runs"
    manifest_before = (runs / "manifest.json").read_bytes()
    db = runs / "sessions.db"
    whole = db.read_bytes()
    assert len(whole) > 8192
    half = whole[: len(whole) // 2]  # what an interrupted copy leaves
    db.write_bytes(half)
    sid = json.loads(manifest_before)[0]["session_id"]

    for args in (["once", "second"], ["once", "--resume", sid, "again"], ["sessions"], ["sessions", "show", sid]):
        done = flower(*args, cwd=workspace)
        one_line_error(done, 3, str(db))
        assert db.read_bytes() == half, f"{args}: the damaged store must be left for the user to rescue"
        assert (runs / "manifest.json").read_bytes() == manifest_before
    assert len(claude_env.message_requests) == 1


def test_a_run_dir_that_is_a_file_is_refused(claude_env: ScriptedServer, workspace: Path) -> None:
    (workspace / "runs").write_text("not a folder\n")
    done = flower("once", "hi", cwd=workspace)
    one_line_error(done, 3, str(workspace / "runs"), "is a file, not a directory", "-r")
    assert (workspace / "runs").read_text() == "not a folder\n"


def test_a_workspace_under_a_file_is_refused(claude_env: ScriptedServer, workspace: Path) -> None:
    (workspace / "plain").write_text("a file\n")
    done = flower("-w", "plain/project", "once", "hi", cwd=workspace)
    one_line_error(done, 3, "the workspace", "is a file, not a directory", "-w")
    assert (workspace / "plain").read_text() == "a file\n"


def test_a_missing_workspace_is_a_usage_error_and_nothing_is_created(
    claude_env: ScriptedServer, workspace: Path
) -> None:
    done = flower("-w", "new/project", "-r", "elsewhere/runs", "once", "hi", cwd=workspace)
    line = one_line_error(done, 2, "the workspace", "does not exist", "mkdir -p", "-w")
    assert str(workspace / "new" / "project") in line
    assert not (workspace / "new").exists() and not (workspace / "elsewhere").exists(), "nothing is created"
    assert claude_env.message_requests == [], "nothing was sent"
    go = flower("-w", "new/project", "build a thing", cwd=workspace)
    one_line_error(go, 2, "does not exist")
    assert sorted(p.name for p in workspace.iterdir()) == []


def test_a_missing_run_dir_is_created_private(claude_env: ScriptedServer, workspace: Path) -> None:
    claude_env.script(Text("made it"))
    (workspace / "project").mkdir()
    done = flower("-w", "project", "-r", "elsewhere/runs", "once", "hi", cwd=workspace)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "made it\n"
    runs = workspace / "elsewhere" / "runs"
    assert (runs / "manifest.json").is_file()
    assert runs.stat().st_mode & 0o777 == 0o700
    for name in ("sessions.db", "manifest.json", "lineage.json"):
        if (runs / name).exists():
            assert (runs / name).stat().st_mode & 0o777 == 0o600, name


def test_a_current_directory_that_was_removed(claude_env: ScriptedServer, tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    proc = subprocess.Popen(
        ["sh", "-c", f'cd "{gone}" && rmdir "{gone}" && exec "{FLOWER}" once hi'],
        env={**os.environ, "FLOWER_NO_UPDATE": "1"},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    out, err = proc.communicate(timeout=120)
    done = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    one_line_error(done, 3, "current directory", "cd")


# --- full and read-only disks: real tmpfs mounts ---------------------------------------------------------


@pytest.fixture
def mount_tmpfs(tmp_path: Path) -> Iterator[Callable[..., Path]]:
    """Mount a small tmpfs (``size_kb``, optionally read-only); unmounted after the test."""
    mounted: list[Path] = []

    def mount(size_kb: int, *, read_only: bool = False) -> Path:
        target = tmp_path / f"disk{len(mounted)}"
        target.mkdir()
        options = f"size={size_kb}k,mode=0777" + (",ro" if read_only else "")
        if shutil.which("mount") is None:
            pytest.skip("no mount(8) here")
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(target)], capture_output=True, text=True
        )
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here (needs root or CAP_SYS_ADMIN): {done.stderr.strip()}")
        mounted.append(target)
        return target

    yield mount
    for target in reversed(mounted):
        subprocess.run(["umount", "-l", str(target)], capture_output=True)


def fill(disk: Path) -> None:
    """Write zeros until the disk refuses even one byte: full for real, not by a mocked write."""
    fd = os.open(disk / "filler", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        for chunk in (65536, 4096, 1):
            try:
                while os.write(fd, b"\0" * chunk):
                    pass
            except OSError:
                continue
    finally:
        os.close(fd)


def test_a_full_disk_before_the_run_is_found_before_any_model_call(
    claude_env: ScriptedServer, workspace: Path, mount_tmpfs: Callable[..., Path]
) -> None:
    disk = mount_tmpfs(256)
    runs = disk / "runs"
    runs.mkdir()
    (runs / "notes.md").write_text("mine\n")
    fill(disk)
    done = flower("-r", str(runs), "once", "hi", cwd=workspace)
    one_line_error(done, 3, "no space left", str(runs), "free some space")
    assert (runs / "notes.md").read_text() == "mine\n"
    assert claude_env.message_requests == []


def test_a_disk_that_fills_during_the_step_keeps_the_answer_and_the_old_manifest(
    claude_env: ScriptedServer, workspace: Path, mount_tmpfs: Callable[..., Path]
) -> None:
    disk = mount_tmpfs(2048)
    runs = disk / "runs"
    claude_env.script(Text("first answer"))
    assert flower("-r", str(runs), "once", "first", cwd=workspace).returncode == 0
    manifest_before = (runs / "manifest.json").read_bytes()

    def fill_then_answer(request: object) -> Text:
        fill(disk)  # the disk fills while the model is thinking
        return Text("the answer that must not be lost")

    claude_env.script(fill_then_answer)
    done = flower("-r", str(runs), "once", "second", cwd=workspace)
    assert done.stdout == "the answer that must not be lost\n"
    one_line_error(done, 3, "no space left", "the manifest", str(runs / "manifest.json"), after_progress=True)
    assert (runs / "manifest.json").read_bytes() == manifest_before, "the old manifest must survive intact"


def test_a_read_only_run_dir_is_refused(
    claude_env: ScriptedServer, workspace: Path, mount_tmpfs: Callable[..., Path]
) -> None:
    disk = mount_tmpfs(64, read_only=True)
    done = flower("-r", str(disk), "once", "hi", cwd=workspace)
    one_line_error(done, 3, str(disk), "read-only", "-r")
    assert claude_env.message_requests == []


@pytest.mark.parametrize("mode", [[], ["--json"]], ids=["text", "json"])
def test_stdout_on_a_full_device_lets_the_step_finish_and_says_where_it_is_kept(
    claude_env: ScriptedServer, workspace: Path, mode: list[str]
) -> None:
    claude_env.script(Text("an answer for a full disk"))
    with open("/dev/full", "w") as full:  # a real device whose every write fails with ENOSPC
        done = flower(*mode, "once", "hi", cwd=workspace, stdout=full.fileno())
    one_line_error(done, 3, "could not write to standard output", "flower sessions", after_progress=True)
    [row] = json.loads((workspace / "runs" / "manifest.json").read_text())
    assert row["ok"] is True, "the step itself must finish: only its output could not be shown"
    shown = flower("sessions", "show", row["session_id"], cwd=workspace)
    assert shown.returncode == 0 and "an answer for a full disk" in shown.stdout


# --- credentials and .env --------------------------------------------------------------------------------


@pytest.mark.parametrize("url", ["not a url", "http://127.0.0.1:99999", "127.0.0.1:8080"])
def test_a_bad_base_url_in_env_is_a_configuration_error_not_a_wait(
    claude_env: ScriptedServer, workspace: Path, url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_BASE_URL")
    (workspace / ".env").write_text(f"ANTHROPIC_BASE_URL={url}\n")
    done = flower("once", "hi", cwd=workspace, timeout=120)
    one_line_error(done, 3, "ANTHROPIC_BASE_URL", str(workspace / ".env"), "flower setup")
    assert not (workspace / "runs" / "manifest.json").exists()


def test_setup_rejects_a_bad_base_url_and_saves_nothing(isolated_home: Path, workspace: Path) -> None:
    done = flower("setup", "--token", "t", "--base-url", "gateway.example.com", cwd=workspace, timeout=60)
    one_line_error(done, 2, "--base-url", "nothing was saved")
    assert not (isolated_home / ".config" / "flower" / ".env").exists()


def test_setup_into_a_user_env_that_is_a_directory(isolated_home: Path, workspace: Path) -> None:
    user_env = isolated_home / ".config" / "flower" / ".env"
    user_env.mkdir(parents=True)
    (user_env / "inside").write_text("keep\n")
    done = flower("setup", "--token", "sk-ant-x", cwd=workspace, timeout=60)
    one_line_error(done, 3, str(user_env))
    assert (user_env / "inside").read_text() == "keep\n"


def test_setup_when_the_config_folder_is_a_file(isolated_home: Path, workspace: Path) -> None:
    folder = isolated_home / ".config" / "flower"
    folder.parent.mkdir(parents=True)
    folder.write_text("oops\n")
    done = flower("setup", "--token", "sk-ant-x", cwd=workspace, timeout=60)
    one_line_error(done, 3, str(folder), "XDG_CONFIG_HOME")
    assert folder.read_text() == "oops\n"


def test_a_dotenv_that_is_binary_or_a_folder_is_skipped_with_a_note(isolated_home: Path, workspace: Path) -> None:
    (workspace / ".env").write_bytes(b"ANTHROPIC_API_KEY=\xff\xfe\x00\n")
    done = flower("once", "hi", cwd=workspace, timeout=60)
    assert done.returncode == 3 and "Traceback" not in done.stderr
    assert "binary" in done.stderr and "flower setup" in done.stderr
