"""What a `claude -p` user expects of `flower`, end to end: the real console script and the real Claude Code
binary against the scripted server — typos that cost nothing, versions, session-id prefixes, prompts from
stdin, shell completion, refused tools said in words, and an answer shown once on a terminal."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest

from flower_cli import CLARIFIER_RULES
from harness import ScriptedServer, Text, ToolUse, bash, keyed, when_system

pytestmark = pytest.mark.e2e

# The console script pip made for flower-cli's [project.scripts]: what users run (and what completion calls).
FLOWER = Path(sys.executable).with_name("flower")


def flower(
    *args: str, cwd: Path, input: str | None = None, env: dict[str, str] | None = None, timeout: float = 240
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(FLOWER), *args],
        cwd=cwd,
        env={**os.environ, "FLOWER_NO_UPDATE": "1", "FLOWER_NO_PROBE": "1", **(env or {})},
        input=input,
        stdin=subprocess.DEVNULL if input is None else None,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


CLARIFIER = when_system(CLARIFIER_RULES.splitlines()[0])
BRIEF = """Here is the brief.

## Goal
Build the greeter.

## Acceptance criteria
- hello.txt says hello

## Boundaries
- no web page

## Unknowns and assumptions
- none
"""


def manifest_rows(workspace: Path) -> list[dict[str, Any]]:
    return json.loads((workspace / "runs" / "manifest.json").read_text())  # type: ignore[no-any-return]


# --- 1. a mistyped command costs nothing; versions ------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "suggestion"),
    [
        (["sesions"], "flower sessions"),
        (["analyse"], "flower analyze"),
        (["help"], "flower --help"),
        (["list"], "flower sessions"),
        (["docter", "--no-probe"], "flower doctor"),
    ],
)
def test_a_mistyped_command_is_a_usage_error_and_starts_nothing(
    claude_env: ScriptedServer, workspace: Path, args: list[str], suggestion: str
) -> None:
    done = flower(*args, cwd=workspace, timeout=60)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    [line] = done.stderr.splitlines()
    assert line.startswith(f"flower: {args[0]!r} is not a command; did you mean {suggestion!r}?")
    assert line.endswith(f"To ask it as a task: flower go {' '.join(args)}")
    assert sorted(p.name for p in workspace.iterdir()) == [], "nothing may be created (no .flower/, no runs/)"
    assert claude_env.message_requests == [], "no session may start"


def test_a_one_word_ask_still_goes(claude_env: ScriptedServer, workspace: Path) -> None:
    claude_env.script(*keyed(CLARIFIER, Text(BRIEF)))
    done = flower("--clarify-only", "--timeout", "0", "refactor", cwd=workspace)
    assert done.returncode == 0, done.stderr
    assert (workspace / ".flower" / "notes" / "brief.md").is_file()


@pytest.mark.parametrize("args", [["-V"], ["--version"], ["version"], ["-v", "version"]])
def test_versions_of_the_parts_and_the_bundled_claude_code(
    isolated_home: Path, workspace: Path, args: list[str]
) -> None:
    done = flower(*args, cwd=workspace, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    for name in ("flower-cli", "flower-env", "flower-stores", "flower-resilience", "flower-workbench"):
        assert f"  {name} " in done.stdout
    assert "  claude-agent-sdk " in done.stdout and "  Claude Code " in done.stdout
    from harness.agent import bundled_claude

    recorded = bundled_claude().with_name("claude.version").read_text().split()[0]
    assert f"Claude Code        {recorded} (bundled with claude-agent-sdk)" in done.stdout
    assert sorted(p.name for p in workspace.iterdir()) == []


# --- 2. session ids: named in full at the end, any unique prefix accepted -------------------------------------


def test_the_closing_line_names_the_session_and_a_prefix_resumes_it(
    claude_env: ScriptedServer, workspace: Path
) -> None:
    claude_env.script(Text("First: remember PAPAYA."), Text("It was PAPAYA."))
    first = flower("once", "remember a word", cwd=workspace)
    assert first.returncode == 0, first.stderr
    [row] = manifest_rows(workspace)
    sid = row["session_id"]
    closing = first.stderr.rstrip("\n").splitlines()[-1]
    assert closing.startswith("total cost $") and f" · session {sid} · manifest " in closing

    second = flower("once", "--resume", sid[:8], "which word?", cwd=workspace)
    assert second.returncode == 0, second.stderr
    assert second.stdout.strip() == "It was PAPAYA."
    assert [r["session_id"] for r in manifest_rows(workspace)] == [sid, sid]
    assert "remember PAPAYA" in claude_env.message_requests[-1].text

    shown = flower("sessions", "show", sid[:6], cwd=workspace)
    assert shown.returncode == 0, shown.stderr
    assert "remember a word" in shown.stdout and "It was PAPAYA." in shown.stdout


def _seed_sessions(workspace: Path, *session_ids: str) -> None:
    from claude_agent_sdk import project_key_for_directory

    from flower_stores import SqliteSessionStore

    project = project_key_for_directory(str(workspace.resolve()))
    store = SqliteSessionStore(workspace / "runs" / "sessions.db")
    try:
        for sid in session_ids:
            entry = {"type": "user", "uuid": f"u-{sid}", "sessionId": sid, "message": {"role": "user", "content": sid}}
            anyio.run(store.append, {"project_key": project, "session_id": sid}, [entry])
    finally:
        store.close()


def test_an_ambiguous_or_unknown_prefix_is_a_usage_error(claude_env: ScriptedServer, workspace: Path) -> None:
    one, two = "abcd1234-0000-4000-8000-000000000001", "abcd9876-0000-4000-8000-000000000002"
    _seed_sessions(workspace, one, two)
    for args in (["sessions", "show", "abcd"], ["once", "--resume", "abcd", "go on"]):
        done = flower(*args, cwd=workspace, timeout=60)
        assert done.returncode == 2, done.stderr
        [line] = done.stderr.splitlines()
        assert "ambiguous" in line and one in line and two in line and "Traceback" not in done.stderr
    for args in (["sessions", "show", "ffff"], ["once", "--resume", "ffff", "go on"]):
        done = flower(*args, cwd=workspace, timeout=60)
        assert done.returncode == 2 and "no session ffff" in done.stderr and "flower sessions" in done.stderr
    shown = flower("sessions", "show", "abcd9", cwd=workspace, timeout=60)
    assert shown.returncode == 0 and two in shown.stdout
    assert claude_env.message_requests == []


# --- 3. the prompt from stdin ----------------------------------------------------------------------------------


@pytest.mark.parametrize("args", [["once"], ["once", "-"], ["-v", "once", "-"]])
def test_a_piped_prompt(claude_env: ScriptedServer, workspace: Path, args: list[str]) -> None:
    claude_env.script(Text("Piped answer."))
    prompt = "summarise this:\nline one\nline two\n"
    done = flower(*args, cwd=workspace, input=prompt)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Piped answer.\n"
    assert claude_env.message_requests[0].first_user_text.endswith("summarise this:\nline one\nline two")


@pytest.mark.parametrize(("args", "stdin"), [(["once"], ""), (["once", "-"], " \n\n"), (["go", "-"], "")])
def test_an_empty_stdin_is_a_usage_error(
    claude_env: ScriptedServer, workspace: Path, args: list[str], stdin: str
) -> None:
    done = flower(*args, cwd=workspace, input=stdin, timeout=60)
    assert done.returncode == 2, done.stderr
    [line] = done.stderr.splitlines()
    assert "the prompt from stdin is empty" in line
    assert sorted(p.name for p in workspace.iterdir()) == [] and claude_env.message_requests == []


def test_go_reads_its_request_from_stdin(claude_env: ScriptedServer, workspace: Path) -> None:
    claude_env.script(*keyed(CLARIFIER, Text(BRIEF)))
    done = flower("go", "-", "--clarify-only", cwd=workspace, input="build a greeter\nthat says hello\n")
    assert done.returncode == 0, done.stderr
    assert "the request came from stdin" in done.stderr
    [request] = claude_env.message_requests
    assert "build a greeter\nthat says hello" in request.first_user_text
    assert (workspace / ".flower" / "notes" / "brief.md").is_file()


# --- 4. shell completion works for `flower` -------------------------------------------------------------------


def _complete(words: str, cword: int, cwd: Path) -> list[str]:
    env = {**os.environ, "_FLOWER_COMPLETE": "complete_bash", "COMP_WORDS": words, "COMP_CWORD": str(cword)}
    done = subprocess.run([str(FLOWER)], cwd=cwd, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_completion_answers_the_shell(isolated_home: Path, workspace: Path) -> None:
    assert _complete("flower sess", 1, workspace) == ["sessions"]
    assert _complete("flower once --res", 2, workspace) == ["--resume"]
    assert "acceptEdits" in _complete("flower once -p ", 3, workspace)
    assert _complete("flower sessions s", 2, workspace) == ["show"]
    assert sorted(p.name for p in workspace.iterdir()) == []


def test_install_completion_for_bash_and_the_installed_script_completes(isolated_home: Path, workspace: Path) -> None:
    env = {"_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1", "HOME": str(isolated_home)}
    shown = flower("--show-completion", "bash", cwd=workspace, env=env, timeout=60)
    assert shown.returncode == 0, shown.stderr
    assert (
        "_FLOWER_COMPLETE=complete_bash" in shown.stdout
        and "complete -o default -F _flower_completion flower" in shown.stdout
    )

    installed = flower("--install-completion", "bash", cwd=workspace, env=env, timeout=60)
    assert installed.returncode == 0, installed.stderr
    script = isolated_home / ".bash_completions" / "flower.sh"
    assert script.is_file() and f"source '{script}'" in (isolated_home / ".bashrc").read_text()
    # What bash does on TAB: source the script, call the function it registered, read COMPREPLY.
    run = subprocess.run(
        [
            "bash",
            "--norc",
            "-c",
            f"source '{script}'; COMP_WORDS=(flower sess); COMP_CWORD=1; "
            '_flower_completion flower; printf "%s\\n" "${COMPREPLY[@]}"',
        ],
        cwd=workspace,
        env={**os.environ, "PATH": f"{FLOWER.parent}{os.pathsep}{os.environ.get('PATH', '')}", "FLOWER_NO_UPDATE": "1"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["sessions"]


# --- 5. a refused tool is said in words for the person, and counted ---------------------------------------------


def test_a_refused_tool_is_named_with_the_flag_that_allows_it(claude_env: ScriptedServer, workspace: Path) -> None:
    claude_env.script(
        bash("echo hi"),
        ToolUse("WebFetch", {"url": "http://example.invalid", "prompt": "read it"}),
        Text("Done without them."),
    )
    done = flower("once", "-t", "Read,Glob", "look around", cwd=workspace)
    assert done.returncode == 0, done.stderr  # it finished: refusals are said, not failed
    assert done.stdout == "Done without them.\n"
    assert "  ! Bash was refused (not in the allowed tools): add it with -t Read,Glob,Bash\n" in done.stderr
    assert "  ! WebFetch was refused (not in the allowed tools): add it with -t Read,Glob,WebFetch\n" in done.stderr
    assert "This is deliberate" not in done.stderr and "hook error" not in done.stderr
    assert done.stderr.rstrip("\n").splitlines()[-1].endswith(" · 2 tool calls refused")
    assert not (workspace / "hi").exists()


def test_json_events_mark_the_refusal(claude_env: ScriptedServer, workspace: Path) -> None:
    claude_env.script(bash("echo hi"), Text("Done."))
    done = flower("--json", "once", "look around", cwd=workspace)
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    [refused] = [e for e in events if e["kind"] == "tool_result"]
    assert refused["payload"]["denied"] == {
        "kind": "not-allowed",
        "tool": "Bash",
        "reason": refused["payload"]["denied"]["reason"],
    }
    assert events[-1]["kind"] == "done" and events[-1]["session_id"]


# --- 6. the answer once on a terminal; alone on stdout elsewhere ------------------------------------------------


class _Pty:
    """A pseudo-terminal whose output is read as it comes (a full pty buffer would block the writer)."""

    def __init__(self) -> None:
        import pty

        self.controller, self.terminal = pty.openpty()
        self.screen = b""
        self._reader = threading.Thread(target=self._drain, daemon=True)

    def start(self) -> None:
        os.close(self.terminal)
        self._reader.start()

    def _drain(self) -> None:
        while True:
            try:
                chunk = os.read(self.controller, 4096)
            except OSError:  # EIO: every writer has closed the terminal
                return
            if not chunk:
                return
            self.screen += chunk

    def text(self) -> str:
        self._reader.join(timeout=30)
        os.close(self.controller)
        return self.screen.decode("utf-8", "replace").replace("\r\n", "\n")


def _run_on(stdout: Any, stderr: Any, workspace: Path, *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [str(FLOWER), *args],
        cwd=workspace,
        env={**os.environ, "FLOWER_NO_UPDATE": "1", "FLOWER_NO_PROBE": "1", "COLUMNS": "120"},
        stdin=subprocess.DEVNULL,
        stdout=stdout,
        stderr=stderr,
    )


def test_on_a_terminal_the_answer_appears_once(claude_env: ScriptedServer, workspace: Path) -> None:
    claude_env.script(Text("The answer is 42."))
    tty = _Pty()
    proc = _run_on(tty.terminal, tty.terminal, workspace, "once", "what is the answer?")
    tty.start()
    assert proc.wait(timeout=240) == 0
    screen = tty.text()
    assert screen.count("The answer is 42.") == 1, screen
    assert "total cost $" in screen


def test_stdout_elsewhere_gets_the_answer_alone(claude_env: ScriptedServer, workspace: Path) -> None:
    claude_env.script(Text("The answer is 42."), Text("Still 42."))
    # progress on a terminal, the answer into a pipe: the pipe holds the answer and nothing else
    tty = _Pty()
    proc = _run_on(subprocess.PIPE, tty.terminal, workspace, "once", "what is the answer?")
    tty.start()
    out, _ = proc.communicate(timeout=240)
    assert proc.returncode == 0 and out == b"The answer is 42.\n"
    assert "The answer is 42." in tty.text()
    # the answer on a terminal, progress into a file: the terminal gets the answer
    tty = _Pty()
    log = workspace.parent / "progress.log"
    with log.open("wb") as progress:
        proc = _run_on(tty.terminal, progress, workspace, "once", "and again?")
        tty.start()
        assert proc.wait(timeout=240) == 0
    assert tty.text().strip() == "Still 42."
    assert "total cost $" in log.read_text()
