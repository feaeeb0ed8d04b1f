"""The tether, on real processes: whatever starts Claude Code through `tethered_cli_path` may die any way it
likes (``kill -9`` included), and the harness and everything it started end within a second.

`/bin/sh` and this Python stand in for Claude Code where the test needs a harness that does something
precise; the last tests run the real bundled binary (``--version``, then a whole SDK session, then an SDK app
SIGKILLed in the middle of a Bash tool call). Nothing here sleeps and hopes: every wait is for a condition
read from /proc (or a pipe), with a deadline.
"""

from __future__ import annotations

import dataclasses
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from claude_agent_sdk import ClaudeAgentOptions

from flower_resilience import default_cli_path, is_tethered, tether, tethered_cli_path
from harness import ScriptedServer, Text, bash
from harness.agent import agent_options, bundled_claude, collect, final_result

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc; the Linux guarantees")

PROMPT_DEADLINE_S = 1.0  # the requirement: everything ends within 1 s of the parent's death
SETUP_DEADLINE_S = 30.0  # for things to start on a loaded machine; not what is under test


# --- /proc ------------------------------------------------------------------------------------------------


def _stat(pid: int) -> list[bytes] | None:
    """The fields after ``(comm)`` in /proc/<pid>/stat: [state, ppid, pgrp, ...]; None when gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    return raw[raw.rfind(b")") + 2 :].split()


def alive(pid: int) -> bool:
    """Running code: a zombie (waiting for a reaper we do not control) has ended."""
    fields = _stat(pid)
    return fields is not None and fields[0] not in (b"Z", b"X")


def ppid(pid: int) -> int | None:
    fields = _stat(pid)
    return int(fields[1]) if fields else None


def pgrp(pid: int) -> int | None:
    fields = _stat(pid)
    return int(fields[2]) if fields else None


def tree(root: int) -> list[int]:
    """Every live descendant of ``root``."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit() and alive(int(name)) and (parent := ppid(int(name))) is not None:
            children.setdefault(parent, []).append(int(name))
    found, todo = [], list(children.get(root, ()))
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, ()))
    return found


def wait_until(condition: Callable[[], object], timeout: float, what: str) -> float:
    """Poll ``condition`` until it holds; the seconds it took. Fails with ``what`` after ``timeout``."""
    start = time.monotonic()
    while not condition():
        if time.monotonic() - start > timeout:
            pytest.fail(f"not within {timeout} s: {what}")
        time.sleep(0.005)
    return time.monotonic() - start


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return "?"


def assert_all_end_within_a_second(pids: list[int], since: float) -> float:
    deadline = since + PROMPT_DEADLINE_S
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.005)
    left = [f"{p} {cmdline(p)}" for p in pids if alive(p)]
    assert not left, f"still running {PROMPT_DEADLINE_S} s after the parent died: {left}"
    return time.monotonic() - since


# --- fixtures ---------------------------------------------------------------------------------------------


@pytest.fixture
def launchers(tmp_path: Path) -> Path:
    return tmp_path / "tether"


@pytest.fixture
def sh(launchers: Path) -> str:
    """A tethered /bin/sh: ``[sh, "-c", script]`` runs ``script`` as the harness."""
    return str(tethered_cli_path("/bin/sh", directory=launchers))


@pytest.fixture
def py(launchers: Path) -> str:
    """A tethered Python: ``[py, "-c", code]`` runs ``code`` as the harness."""
    return str(tethered_cli_path(sys.executable, directory=launchers))


class Started:
    """What a test started: killed at the end whatever happened, so a failing test leaves nothing running."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen[bytes]] = []
        self.pids: set[int] = set()

    def family(self, root: int) -> list[int]:
        """``root``'s live descendants, remembered for the clean-up (they outlive a SIGKILLed root)."""
        found = tree(root)
        self.pids.update(found)
        return found


@pytest.fixture
def started() -> Iterator[Started]:
    record = Started()
    yield record
    for proc in record.procs:
        record.family(proc.pid)
    for pid in [*record.pids, *(p.pid for p in record.procs)]:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    for proc in record.procs:
        proc.wait()


def start_parent(
    code: str, started: Started, *, stdin: int = subprocess.DEVNULL, new_session: bool = False
) -> subprocess.Popen[bytes]:
    """A Python process playing the SDK app: it runs ``code`` (which starts the launcher), then waits forever."""
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code) + "\nimport time\nwhile True: time.sleep(60)\n"],
        stdin=stdin,
        stdout=subprocess.PIPE,
        start_new_session=new_session,
    )
    started.procs.append(proc)
    return proc


def read_line(proc: subprocess.Popen[bytes]) -> str:
    assert proc.stdout is not None
    line = proc.stdout.readline().decode().strip()
    assert line, f"the parent ended early (status {proc.poll()})"
    return line


# --- the parent dies ----------------------------------------------------------------------------------------

# A harness that starts two children, a grandchild through a subshell that exits at once (an orphan: it must
# be adopted by the tether, or nothing would find it), and then waits.
FAMILY = "(sleep 300 &); sleep 301 & sleep 302 & wait"


@pytest.mark.parametrize("children", ["plain", "ignore SIGTERM"])
def test_sigkill_of_the_parent_ends_the_harness_and_all_it_started_within_a_second(
    sh: str, started: Started, children: str
) -> None:
    script = FAMILY if children == "plain" else "trap '' TERM; " + FAMILY  # the ignore is inherited
    parent = start_parent(
        f"""
        import subprocess
        launcher = subprocess.Popen([{sh!r}, "-c", {script!r}], stdout=subprocess.DEVNULL)
        print(launcher.pid, flush=True)
        """,
        started,
    )
    launcher = int(read_line(parent))
    # launcher -> sh -> sleep 301, sleep 302; launcher -> sleep 300 (adopted when its subshell exited)
    wait_until(lambda: len(tree(parent.pid)) == 5, SETUP_DEADLINE_S, "the harness and its 3 sleeps start")
    family = started.family(parent.pid)
    orphan = [p for p in family if cmdline(p) == "sleep 300"]
    assert orphan and ppid(orphan[0]) == launcher, "the orphaned grandchild was not adopted by the tether"

    os.kill(parent.pid, signal.SIGKILL)
    took = assert_all_end_within_a_second(family, time.monotonic())
    print(f"{children}: {len(family)} processes ended {took * 1000:.0f} ms after the parent's SIGKILL")


@pytest.mark.parametrize("death", ["SIGTERM", "a normal exit"])
def test_any_death_of_the_parent_ends_the_tree(sh: str, started: Started, death: str) -> None:
    # No close(), no cleanup of its own: the app just goes, as a crashed or careless one would.
    parent = start_parent(
        f"""
        import subprocess, sys
        launcher = subprocess.Popen([{sh!r}, "-c", {FAMILY!r}], stdout=subprocess.DEVNULL)
        print(launcher.pid, flush=True)
        sys.stdin.readline()
        sys.exit(0)
        """,
        started,
        stdin=subprocess.PIPE,
    )
    read_line(parent)
    wait_until(lambda: len(tree(parent.pid)) == 5, SETUP_DEADLINE_S, "the harness and its 3 sleeps start")
    family = started.family(parent.pid)
    if death == "SIGTERM":
        parent.terminate()
    else:
        assert parent.stdin is not None
        parent.stdin.write(b"exit now\n")
        parent.stdin.close()
    assert parent.wait(timeout=SETUP_DEADLINE_S) == (-15 if death == "SIGTERM" else 0)
    assert_all_end_within_a_second(family, time.monotonic())


def _waiting(pid: int) -> tuple[bool, str]:
    """(asleep with no signal pending, the system call it sleeps in) for a process of ours."""
    status = Path(f"/proc/{pid}/status").read_text()
    pending = [line.split()[1] for line in status.splitlines() if line.startswith(("SigPnd", "ShdPnd"))]
    syscall = Path(f"/proc/{pid}/syscall").read_text().split()[0]
    return (_stat(pid) or [b"?"])[0] == b"S" and all(int(p, 16) == 0 for p in pending), syscall


def test_a_thread_that_started_the_harness_may_end_and_the_harness_lives_on(py: str, started: Started) -> None:
    """PR_SET_PDEATHSIG fires when the parent *thread* ends (trio starts processes from worker threads that
    end when idle): that alone must not end the harness; the parent's death still must."""
    parent = start_parent(
        f"""
        import subprocess, sys, threading
        go = threading.Event()
        def spawn():
            launcher = subprocess.Popen([{py!r}, "-c", {LISTENER!r}], stdin=subprocess.DEVNULL)
            print(launcher.pid, threading.get_native_id(), flush=True)
            go.wait()
        worker = threading.Thread(target=spawn)
        worker.start()
        sys.stdin.readline()
        go.set()
        worker.join()
        """,
        started,
        stdin=subprocess.PIPE,
    )
    launcher, thread = map(int, read_line(parent).split())
    assert read_line(parent) == "ready"  # the harness runs: the tether has set its watch long since
    family = started.family(parent.pid)
    wait_until(lambda: _waiting(launcher)[0], SETUP_DEADLINE_S, "the tether waits")
    idle_call = _waiting(launcher)[1]

    assert parent.stdin is not None
    parent.stdin.write(b"end the thread\n")
    parent.stdin.flush()
    # The thread's task is released after the kernel re-parented its children and signalled them.
    wait_until(lambda: not Path(f"/proc/{parent.pid}/task/{thread}").exists(), SETUP_DEADLINE_S, "thread gone")
    # No signal pending any more and asleep in its wait again: it took the signal, looked, and went back.
    wait_until(lambda: _waiting(launcher) == (True, idle_call), SETUP_DEADLINE_S, "the tether waits again")
    os.kill(launcher, signal.SIGUSR1)
    assert read_line(parent) == "SIGUSR1", "the end of the spawning thread ended the harness"

    os.kill(parent.pid, signal.SIGKILL)
    assert_all_end_within_a_second(family, time.monotonic())


def test_the_portable_watch_for_macos_and_bsd_ends_the_tree_too(tmp_path: Path, started: Started) -> None:
    """The path taken where there is no prctl, run here by making the tether believe it is on macOS: the
    parent's death is seen by polling getppid(), and the tree is read from ``ps`` (no subreaper: only a
    process still in the tree is reached, so no orphan in this family)."""
    tether_py = Path(tethered_cli_path.__code__.co_filename).with_name("_tether.py")
    portable = tmp_path / "portable-tether"
    code = f"import runpy, sys; sys.platform = 'darwin'; runpy.run_path({str(tether_py)!r}, run_name='__main__')"
    portable.write_text(f'#!/bin/sh\nexec {sys.executable} -I -S -c "{code}" /bin/sh "$@"\n')
    portable.chmod(0o755)
    parent = start_parent(
        f"""
        import subprocess
        subprocess.Popen([{str(portable)!r}, "-c", "sleep 301 & sleep 302 & wait"], stdout=subprocess.DEVNULL)
        print("started", flush=True)
        """,
        started,
    )
    read_line(parent)
    wait_until(lambda: len(tree(parent.pid)) == 4, SETUP_DEADLINE_S, "the harness and its 2 sleeps start")
    family = started.family(parent.pid)
    os.kill(parent.pid, signal.SIGKILL)
    assert_all_end_within_a_second(family, time.monotonic())


def test_sigkill_of_the_tether_itself_takes_the_harness_with_it(sh: str, started: Started) -> None:
    """The SDK's last resort in close() is SIGKILL to the process it started, which is now the tether."""
    launcher = subprocess.Popen([sh, "-c", "exec sleep 300"], stdin=subprocess.DEVNULL)
    started.procs.append(launcher)
    wait_until(lambda: len(tree(launcher.pid)) == 1 and cmdline(tree(launcher.pid)[0]) == "sleep 300", 30, "start")
    (harness,) = started.family(launcher.pid)
    launcher.kill()
    launcher.wait()
    assert_all_end_within_a_second([harness], time.monotonic())


# --- pass-through -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("script", "returncode"), [("exit 0", 0), ("exit 7", 7), ("kill -TERM $$", -15), ("kill -KILL $$", -9)]
)
def test_the_exit_status_passes_through(sh: str, script: str, returncode: int) -> None:
    assert subprocess.run([sh, "-c", script], timeout=30, check=False).returncode == returncode


def test_a_harness_that_cannot_start_fails_like_a_shell_says(tmp_path: Path, launchers: Path) -> None:
    real = tmp_path / "claude"
    real.write_text("#!/bin/sh\necho ran\n")
    real.chmod(0o755)
    launcher = str(tethered_cli_path(real, directory=launchers))
    assert subprocess.run([launcher], capture_output=True, timeout=30, check=True).stdout == b"ran\n"
    real.chmod(0o644)
    denied = subprocess.run([launcher], capture_output=True, timeout=30, check=False)
    assert denied.returncode == 126 and f"cannot run {real}".encode() in denied.stderr
    real.unlink()
    missing = subprocess.run([launcher], capture_output=True, timeout=30, check=False)
    assert missing.returncode == 127 and b"No such file" in missing.stderr


def test_stdin_stdout_and_stderr_pass_through_untouched(sh: str, launchers: Path) -> None:
    done = subprocess.run(
        [sh, "-c", 'read line; echo "out: $line"; echo "err: $line" >&2'],
        input=b"hello tether\n",
        capture_output=True,
        timeout=30,
        check=True,
    )
    assert (done.stdout, done.stderr) == (b"out: hello tether\n", b"err: hello tether\n")
    # A stream the size of a long session's, byte for byte (the SDK's NDJSON never goes through the tether).
    payload = os.urandom(4 << 20)
    cat = str(tethered_cli_path("/bin/cat", directory=launchers))
    assert subprocess.run([cat], input=payload, capture_output=True, timeout=60, check=True).stdout == payload


def test_arguments_and_environment_reach_the_harness_as_given(py: str) -> None:
    code = "import json, os, sys; print(json.dumps([sys.argv[1:], os.environ.get('TETHER_PROBE')]))"
    args = ["--output-format", "stream-json", "a b", "", "$HOME", "'quoted'"]
    out = subprocess.run(
        [py, "-c", code, *args], env={**os.environ, "TETHER_PROBE": "x y"}, capture_output=True, timeout=30, check=True
    ).stdout
    assert out.decode().strip() == '[["--output-format", "stream-json", "a b", "", "$HOME", "\'quoted\'"], "x y"]'


# A harness that reports every signal it gets on stdout, and exits 3 on SIGTERM.
LISTENER = """
import signal, sys
def got(signum, frame):
    print(signal.Signals(signum).name, flush=True)
    if signum == signal.SIGTERM:
        sys.exit(3)
for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2):
    signal.signal(s, got)
print("ready", flush=True)
while True:
    signal.pause()
"""


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2])
def test_signals_sent_to_the_tether_reach_the_harness(py: str, signum: signal.Signals) -> None:
    with subprocess.Popen([py, "-c", LISTENER], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE) as launcher:
        assert launcher.stdout is not None
        assert launcher.stdout.readline() == b"ready\n"
        launcher.send_signal(signum)
        assert launcher.stdout.readline().decode().strip() == signum.name
        launcher.terminate()
        assert launcher.stdout.readline() == b"SIGTERM\n"
        assert launcher.wait(timeout=30) == 3


def test_sigterm_to_the_tether_reaches_the_harness_and_its_status_comes_back(py: str) -> None:
    with subprocess.Popen([py, "-c", LISTENER], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE) as launcher:
        assert launcher.stdout is not None
        assert launcher.stdout.readline() == b"ready\n"
        launcher.terminate()  # what the SDK's close() sends when the harness does not stop on stdin EOF
        assert launcher.stdout.readline() == b"SIGTERM\n"
        assert launcher.wait(timeout=30) == 3


def test_a_ctrl_c_at_the_terminal_reaches_the_harness_once(py: str, started: Started) -> None:
    """A terminal signals its foreground process group: the app and the harness, as before the tether.

    The tether leaves that group, so it does not pass the same Ctrl-C on a second time.
    """
    parent = start_parent(
        f"""
        import signal, subprocess, sys
        signal.signal(signal.SIGINT, lambda *a: None)  # the app survives it (a handler, not SIG_IGN: inherited)
        launcher = subprocess.Popen([{py!r}, "-c", {LISTENER!r}], stdin=subprocess.DEVNULL)
        """,
        started,
        new_session=True,  # its own process group, as a shell's job has
    )
    assert read_line(parent) == "ready"
    (launcher,) = (p for p in started.family(parent.pid) if ppid(p) == parent.pid)
    (harness,) = tree(launcher)
    assert pgrp(harness) == parent.pid and pgrp(launcher) != parent.pid

    os.killpg(parent.pid, signal.SIGINT)  # what the terminal does on Ctrl-C
    assert read_line(parent) == "SIGINT"
    # A SIGINT passed on by the tether would be delivered before this later SIGUSR1 (lower signals first).
    os.kill(launcher, signal.SIGUSR1)
    assert read_line(parent) == "SIGUSR1"


def test_what_the_harness_leaves_running_ends_with_it(sh: str) -> None:
    # The background sleep holds stdout: the reader gets its EOF only once the tether has ended it.
    done = subprocess.run([sh, "-c", "sleep 300 & echo $!"], capture_output=True, timeout=30, check=True)
    leftover = int(done.stdout)
    assert not alive(leftover)


# --- the API ------------------------------------------------------------------------------------------------


def test_the_launcher_is_written_once_and_reused(launchers: Path) -> None:
    first = tethered_cli_path("/bin/sh", directory=launchers)
    inode = first.stat().st_ino
    assert tethered_cli_path("/bin/sh", directory=launchers) == first and first.stat().st_ino == inode
    assert first.stat().st_mode & 0o777 == 0o755 and is_tethered(first)
    assert tethered_cli_path(first) == first  # tethering a launcher again does not nest
    assert tethered_cli_path("/bin/cat", directory=launchers) != first
    assert tethered_cli_path("sh", directory=launchers).is_file()  # a bare name is looked up on PATH
    assert not is_tethered("/bin/sh") and not is_tethered(None)
    with pytest.raises(FileNotFoundError, match="not found"):
        tethered_cli_path(launchers / "no-such-claude", directory=launchers)


def test_without_a_path_it_tethers_the_binary_the_sdk_would_run(launchers: Path) -> None:
    assert default_cli_path() == bundled_claude()
    launcher = tethered_cli_path(directory=launchers)
    assert str(bundled_claude()) in launcher.read_text()


def test_tether_copies_the_options_with_a_tethered_cli_path(launchers: Path, workspace: Path) -> None:
    options = ClaudeAgentOptions(cwd=str(workspace), allowed_tools=["Bash"])
    tethered = tether(options, directory=launchers)
    assert options.cli_path is None  # not modified
    assert tethered.cli_path is not None and is_tethered(tethered.cli_path)
    assert dataclasses.replace(tethered, cli_path=None) == options
    assert tether(tethered, directory=launchers) == tethered


# --- the real Claude Code -----------------------------------------------------------------------------------


def test_the_real_claude_code_runs_through_the_launcher(launchers: Path, claude_binary: Path) -> None:
    direct = subprocess.run([str(claude_binary), "--version"], capture_output=True, timeout=60, check=True)
    launcher = tethered_cli_path(claude_binary, directory=launchers)
    through = subprocess.run([str(launcher), "--version"], capture_output=True, timeout=60, check=True)
    assert through.stdout == direct.stdout and b"Claude Code" in through.stdout


@pytest.mark.e2e
async def test_an_sdk_session_through_the_tether_runs_as_before(
    claude_env: ScriptedServer, workspace: Path, launchers: Path
) -> None:
    claude_env.script(bash("echo tethered > out.txt"), Text("Done."))
    options = tether(agent_options(workspace), directory=launchers)
    result = final_result(await collect("write the file", options))
    assert not result.is_error and result.result == "Done."
    assert (workspace / "out.txt").read_text() == "tethered\n"


@pytest.mark.e2e
def test_an_sdk_app_killed_mid_tool_leaves_nothing_running_and_nothing_talking(
    claude_env: ScriptedServer, workspace: Path, launchers: Path, started: Started
) -> None:
    """The defect: after ``kill -9`` of the app, Claude Code finished the tool and went on asking the model."""
    # The tool waits for a file the test creates only after the kill: had the harness lived, it would then
    # have sent its next request.
    claude_env.script(
        bash("touch started; until [ -e go ]; do sleep 0.05; done; echo released"),
        bash("echo again"),
        Text("Done."),
    )
    options = tether(agent_options(workspace), directory=launchers)
    parent = start_parent(
        f"""
        import anyio
        from claude_agent_sdk import ClaudeAgentOptions, query
        options = ClaudeAgentOptions(cwd={str(workspace)!r}, setting_sources=[], allowed_tools=["Bash"],
                                     cli_path={str(options.cli_path)!r})
        async def main():
            async for message in query(prompt="go", options=options):
                pass
        anyio.run(main)
        """,
        started,
    )
    wait_until(lambda: (workspace / "started").exists(), SETUP_DEADLINE_S, "the Bash tool starts")
    family = started.family(parent.pid)
    assert any("until [ -e go ]" in cmdline(p) for p in family), [cmdline(p) for p in family]
    requests = len(claude_env.message_requests)

    os.kill(parent.pid, signal.SIGKILL)
    assert_all_end_within_a_second(family, time.monotonic())
    # Nothing of the session is left to see the file, so nothing can ask the model anything any more.
    (workspace / "go").touch()
    assert len(claude_env.message_requests) == requests


@pytest.mark.e2e
def test_the_readme_tether_example_runs(
    claude_env: ScriptedServer, workspace: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    readme = Path(__file__).resolve().parents[2] / "packages" / "flower-resilience" / "README.md"
    (block,) = [
        b for b in re.findall(r"```python\n(.*?)```", readme.read_text(), re.DOTALL) if "tethered_cli_path()" in b
    ]
    claude_env.script(Text("All green."))
    monkeypatch.chdir(workspace)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)  # the launcher goes under the test's HOME
    exec(compile(block, str(readme), "exec"), {"__name__": "readme"})
    assert capsys.readouterr().out == "result: All green.\n"
    launchers = list((Path(os.environ["HOME"]) / ".cache" / "flower-resilience" / "tether").iterdir())
    assert len(launchers) == 1 and is_tethered(launchers[0])  # it ran through the tether, in the test's HOME
