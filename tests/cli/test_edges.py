"""Issue 21's small edges: a missing -w, SIGTERM's one line, private file modes, the key read without echo."""

from __future__ import annotations

import io
import os
import pty
import stat
import subprocess
import sys
import termios
import textwrap
import threading
import time
from pathlib import Path

import anyio
import pytest

from flower_cli._shared.exits import ExitCode
from flower_cli.cli import main
from flower_cli.cli.actions.doctor import _show_run_dir
from flower_cli.cli.actions.secret_input import read_secret_line
from flower_cli.runtime import Handoff, Runtime
from flower_cli.runtime._handoff import save
from flower_cli.view import Renderer
from flower_stores import SqliteSessionStore


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# --- -w to a missing directory -----------------------------------------------------------------------


def test_a_missing_workspace_is_exit_2_and_nothing_is_created(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "typo" / "project"
    assert main(["-w", str(missing), "once", "hi"]) == ExitCode.USAGE
    [line] = capsys.readouterr().err.splitlines()
    assert f"the workspace {missing} does not exist" in line and "mkdir -p" in line and "-w" in line
    assert not (tmp_path / "typo").exists()


def test_a_file_in_the_way_of_the_workspace_stays_exit_3(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "plain").write_text("a file\n")
    for given in (tmp_path / "plain", tmp_path / "plain" / "project"):
        assert main(["-w", str(given), "once", "hi"]) == ExitCode.CONFIG
        [line] = capsys.readouterr().err.splitlines()
        assert "is a file, not a directory" in line and "-w" in line
    assert (tmp_path / "plain").read_text() == "a file\n"


# --- SIGTERM -----------------------------------------------------------------------------------------

_TERMINATED = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    from flower_cli.cli.actions.rescue import rescued
    from flower_cli.runtime import Runtime, StepResult

    ws = Path(sys.argv[1])
    runtime = Runtime(ws, ws / "runs")
    runtime.results.append(StepResult(step="work", session_id="sess-1234", ok=False, error="killed-by-signal"))
    with rescued(runtime, recorded="the step is", again='flower once --resume {session} "…"'):
        os.kill(os.getpid(), signal.SIGTERM)
        signal.pause()
    """
)


def test_sigterm_says_what_was_recorded_and_how_to_continue_then_exits_143(
    isolated_home: Path, workspace: Path
) -> None:
    env = {**os.environ, "ANTHROPIC_API_KEY": "sk-ant-test-dummy"}
    script = f'"{sys.executable}" -c "$0" "$1"; echo "status=$?"'
    done = subprocess.run(
        ["sh", "-c", script, _TERMINATED, str(workspace)], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.stdout.strip() == "status=143", done.stderr
    # The process dies of the signal (so a parent sees how it ended); sh adds its own "Terminated" for that.
    lines = [x for x in done.stderr.splitlines() if x.strip() and x.strip() != "Terminated"]
    assert len(lines) == 1, done.stderr
    [line] = lines
    assert line.startswith("flower: stopped by SIGTERM; the step is recorded in ")
    assert str(workspace / "runs" / "manifest.json") in line and "session sess-1234" in line
    assert line.endswith('to continue: flower once --resume sess-1234 "…"')


# The signal arrives while the loop runs: tasks busy with work of their own (as the SDK's reader and a lease
# renewal are) and the main task waiting. Printed: what `main` saw, then the closing line, then the status.
_TERMINATED_IN_LOOP = textwrap.dedent(
    """
    import os, signal, sys, time
    from pathlib import Path
    import anyio
    from flower_cli.cli.actions.rescue import rescued, run_rescued
    from flower_cli.runtime import Runtime

    ws = Path(sys.argv[1])
    runtime = Runtime(ws, ws / "runs")

    async def busy() -> None:
        while True:
            time.sleep(0.002)  # the main thread is inside this task most of the time
            await anyio.sleep(0)

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            for _ in range(4):
                tg.start_soon(busy)
            os.kill(os.getpid(), signal.SIGTERM)
            try:
                await anyio.sleep(60)
            finally:
                print("main unwound", flush=True)

    with rescued(runtime, recorded="the step is", again="run it again"):
        run_rescued(runtime, main)
    """
)


def test_sigterm_while_the_loop_runs_busy_tasks_unwinds_main_then_exits_143(
    isolated_home: Path, workspace: Path
) -> None:
    env = {**os.environ, "ANTHROPIC_API_KEY": "sk-ant-test-dummy"}
    script = f'"{sys.executable}" -c "$0" "$1"; echo "status=$?"'
    for _ in range(5):  # where the signal lands varies; each time it must unwind
        done = subprocess.run(
            ["sh", "-c", script, _TERMINATED_IN_LOOP, str(workspace)],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.stdout.split() == ["main", "unwound", "status=143"], (done.stdout, done.stderr)
        assert "flower: stopped by SIGTERM" in done.stderr, done.stderr


async def _raises_as_is() -> None:
    raise LookupError("as it came")


def test_run_rescued_returns_the_value_and_raises_an_error_as_it_came(
    isolated_home: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from flower_cli.cli.actions.rescue import run_rescued

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-dummy")
    runtime = Runtime(workspace, workspace / "runs")
    try:

        async def answer() -> int:
            return 42

        assert run_rescued(runtime, answer) == 42
        with pytest.raises(LookupError, match="as it came"):  # not an exception group
            run_rescued(runtime, _raises_as_is)
    finally:
        runtime.close()


# --- private files -----------------------------------------------------------------------------------


@pytest.fixture
def umask_022() -> object:
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_the_run_dir_and_the_session_store_are_created_private(
    isolated_home: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch, umask_022: object
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-dummy")
    runtime = Runtime(workspace, workspace / "runs")
    try:
        assert mode(workspace / "runs") == 0o700
    finally:
        runtime.close()

    db = workspace / "other" / "sessions.db"
    store = SqliteSessionStore(db)
    try:
        key = {"project_key": "p", "session_id": "s"}
        anyio.run(store.append, key, [{"type": "user", "uuid": "u1", "message": {"content": "hi"}}])
        side = [Path(f"{db}-wal"), Path(f"{db}-shm")]
        assert all(p.exists() for p in side), "WAL mode keeps its side files while a connection is open"
        assert {p.name: mode(p) for p in (db, *side)} == {p.name: 0o600 for p in (db, *side)}
    finally:
        store.close()


def test_an_existing_store_file_keeps_its_mode(tmp_path: Path, umask_022: object) -> None:
    db = tmp_path / "sessions.db"
    SqliteSessionStore(db).close()
    db.chmod(0o640)  # a person chose this; flower never chmods behind their back
    SqliteSessionStore(db).close()
    assert mode(db) == 0o640


def test_spill_files_and_handoff_documents_are_0600(tmp_path: Path, umask_022: object) -> None:
    from flower_stores.rewrite._trim import _write_once

    spill = tmp_path / "ws" / ".flower" / "spill" / "abc.txt"
    assert _write_once(str(spill), "a large tool output")
    assert mode(spill) == 0o600 and mode(spill.parent) == 0o700

    path = save(tmp_path / "notes", "work", Handoff(doing="x", decided="y", next_step="z", scene="w"))
    assert mode(path) == 0o600
    again = save(tmp_path / "notes", "work", Handoff(doing="x2", decided="y", next_step="z", scene="w"))
    assert mode(again) == 0o600


def test_doctor_warns_about_a_run_dir_others_can_read(tmp_path: Path) -> None:
    run_dir = tmp_path / "my runs"
    run_dir.mkdir(mode=0o755)
    run_dir.chmod(0o755)
    out = io.StringIO()
    problems: list[tuple[ExitCode, str]] = []
    found = _show_run_dir(Renderer(out, color=False), run_dir, problems)
    assert found["private"] is False and found["mode"] == "0755" and found["writable"] is True
    assert f"chmod 700 '{run_dir}'" in out.getvalue() and "!" in out.getvalue()
    assert problems == [], "a readable run dir is a warning, not a problem"
    run_dir.chmod(0o700)
    out = io.StringIO()
    assert _show_run_dir(Renderer(out, color=False), run_dir, problems)["private"] is True
    assert "chmod" not in out.getvalue() and list(run_dir.iterdir()) == []


# --- the key without echo ----------------------------------------------------------------------------


def test_the_key_is_read_without_echo_on_a_terminal_and_echo_comes_back() -> None:
    controller, terminal = pty.openpty()
    stream = os.fdopen(terminal, "r", encoding="utf-8", closefd=False)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(read_secret_line(stream, echo_to=io.StringIO())))
    try:
        reader.start()
        deadline = time.monotonic() + 30
        while termios.tcgetattr(terminal)[3] & termios.ECHO:  # wait until echo is off, then type
            assert time.monotonic() < deadline, "echo was never turned off"
            time.sleep(0.01)
        os.write(controller, b"sk-ant-secret-typed\n")
        reader.join(30)
        assert got == ["sk-ant-secret-typed"]
        assert termios.tcgetattr(terminal)[3] & termios.ECHO, "echo is back on afterwards"
        os.set_blocking(controller, False)
        try:
            shown = os.read(controller, 4096)
        except BlockingIOError:
            shown = b""
        assert b"sk-ant-secret" not in shown
    finally:
        stream.close()
        os.close(terminal)
        os.close(controller)


def test_the_key_from_a_pipe_is_a_plain_line() -> None:
    assert read_secret_line(io.StringIO("sk-ant-piped\nrest\n"), echo_to=io.StringIO()) == "sk-ant-piped"
    with pytest.raises(EOFError):
        read_secret_line(io.StringIO(""), echo_to=io.StringIO())
