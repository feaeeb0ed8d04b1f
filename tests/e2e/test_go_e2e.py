"""`flower go` end to end: the real `flower` command and the real Claude Code binary against ONE scripted
server that plays the clarifier, the goal-setter, the coordinator, its worker and the judge — each reply
picked by the role's system prompt (and, for the two judge modes, by the first message)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from e2e._runs import tool_result_after

from flower_cli import CLARIFIER_RULES, COORDINATOR_RULES, JUDGE_RULES, Brief, Goal
from flower_cli.go._aside import ASIDE_RULES
from flower_cli.go._human import DECLINED_TEXT, TIMEOUT_TEXT
from harness import (
    After,
    Hang,
    ScriptedServer,
    Text,
    ToolUse,
    Turn,
    bash,
    dispatch,
    keyed,
    when,
    when_main,
    when_notified,
    when_prompt,
    when_system,
)

pytestmark = pytest.mark.e2e

CLARIFIER = when_system(CLARIFIER_RULES.splitlines()[0])
LEAD = when_system(COORDINATOR_RULES.splitlines()[0]) & when_main()
GOAL_SETTER = when_system(JUDGE_RULES.splitlines()[0]) & when_prompt("Mode A")
JUDGE = when_system(JUDGE_RULES.splitlines()[0]) & when_prompt("Mode B")
ASIDE = when_system(ASIDE_RULES.splitlines()[0])

QUESTION = "Should the greeting be in English or in French?"
OPTIONS = ["English", "French"]
BRIEF = """Here is the brief.

## Goal
Build the greeter: a hello.txt that greets the reader.

## Acceptance criteria
- hello.txt exists and says hello
- README.md explains it

## Boundaries
- no web page

## Unknowns and assumptions
- Assumption: the greeting is in English (nobody answered the question).
"""
GOAL = """## Goal
hello.txt greets the reader and README.md explains it.

## Checks
- hello.txt exists and contains "hello"
- README.md exists
"""


def verdict(state: str, reason: str, *failed: str) -> Text:
    items = "\n".join(f"- {f}" for f in failed) or "- none"
    return Text(f"## Verdict\n{state}\n\n## Reason\n{reason}\n\n## Failed checks\n{items}")


def env_for(extra: dict[str, str] | None = None) -> dict[str, str]:
    return {**os.environ, "FLOWER_NO_UPDATE": "1", "FLOWER_NO_PROBE": "1", **(extra or {})}


def flower(
    *args: str, cwd: Path, timeout: float = 300, stdin: Any = subprocess.DEVNULL, input: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flower_cli", *args],
        cwd=cwd,
        env=env_for(),
        stdin=None if input is not None else stdin,
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def rows(ws: Path) -> list[dict[str, Any]]:
    return json.loads((ws / "runs" / "manifest.json").read_text())  # type: ignore[no-any-return]


def notes(ws: Path) -> Path:
    return ws / ".flower" / "notes"


def stored(ws: Path, fragment: str) -> bool:
    import sqlite3

    db = ws / "runs" / "sessions.db"
    if not db.exists():
        return False
    with sqlite3.connect(db) as conn:
        return any(fragment in payload for (payload,) in conn.execute("select payload from entries"))


def seed(ws: Path, *, goal: bool = True) -> None:
    """A directory that already went through clarify (and goal): the next `flower` there wakes."""
    Brief.parse(BRIEF).write(notes(ws) / "brief.md")
    if goal:
        Goal.parse(GOAL).write(notes(ws) / "goal.md")


# --- the whole path --------------------------------------------------------------------------------


def test_clarify_goal_work_judged_twice_continues_the_same_session(claude_env: ScriptedServer, workspace: Path) -> None:
    claude_env.script(
        *keyed(CLARIFIER, ToolUse("mcp__human__ask", {"question": QUESTION, "options": OPTIONS}), Text(BRIEF)),
        *keyed(GOAL_SETTER, Text(GOAL)),
        *keyed(
            LEAD & ~when_notified(),
            Turn(
                [
                    "One worker writes the greeting.",
                    dispatch(
                        "write hello",
                        bash("echo hello > hello.txt"),
                        Text("WROTE-HELLO: hello.txt"),
                        subagent_type="coder",
                    ),
                ]
            ),
            Text("Dispatched; waiting."),
        ),
        *keyed(LEAD & when_notified("WROTE-HELLO"), Text("Round one: hello.txt is written.")),
        *keyed(
            JUDGE,
            verdict("not yet", "README-MISSING: there is no README.md", "README.md exists"),
            verdict("achieved", "both checks pass"),
        ),
        *keyed(
            LEAD & when(lambda r: "README-MISSING" in r.last_user_text),
            Text("Round two: README.md written too. ALL-DONE"),
        ),
    )
    done = flower("--timeout", "0", "build a greeter", cwd=workspace)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout.strip() == "Round two: README.md written too. ALL-DONE"
    assert claude_env.unscripted == [] and claude_env.rejected == []
    assert (workspace / "hello.txt").read_text().strip() == "hello"

    # the question fell through at once, the model was told to record its assumption, and it is in the brief
    assert tool_result_after(claude_env, "mcp__human__ask") == TIMEOUT_TEXT
    brief = Brief.load(notes(workspace) / "brief.md")
    assert brief.complete and "Assumption: the greeting is in English" in brief.unknowns
    assert "Here is the brief." not in (notes(workspace) / "brief.md").read_text(), (
        "the file is the parsed brief, not the raw answer"
    )
    goal = Goal.load(notes(workspace) / "goal.md")
    assert goal.complete and len(goal.checks) == 2
    qa = (notes(workspace) / "qa-log.md").read_text()
    assert QUESTION in qa and "**A** [timeout]" in qa
    assert f"? {QUESTION}" in done.stderr, "a question that fell through is still shown"

    manifest = rows(workspace)
    assert [r["step"] for r in manifest] == ["clarify", "goal", "work", "work·judge#1", "work#round2", "work·judge#2"]
    assert all(r["ok"] for r in manifest)
    work = [r for r in manifest if r["step"] in ("work", "work#round2")]
    assert len({r["session_id"] for r in work}) == 1, "round two continues the same work session"
    judges = {r["session_id"] for r in manifest if "·judge#" in r["step"]}
    assert len(judges) == 2 and work[0]["session_id"] not in judges, "each judge is a fresh session"
    round_two = next(r for r in claude_env.message_requests if LEAD(r) and "README-MISSING" in r.last_user_text)
    assert "Round one: hello.txt is written." in round_two.text, "the same conversation goes on"
    assert "README.md exists" in round_two.last_user_text, "the judge's gaps are fed back"
    second_judge = [r for r in claude_env.message_requests if JUDGE(r)][-1]
    assert "Round two: README.md written too." in second_judge.first_user_text
    lineage = json.loads((workspace / "runs" / "lineage.json").read_text())
    assert set(lineage["steps"]) == {"clarify", "goal", "work"} and lineage["steps"]["work"] == work[0]["session_id"]
    assert "== clarify" in done.stderr and "== work" in done.stderr and "3/3" in done.stderr
    # each judge's words sit under a header of their own, after the round it judges
    first_judge = done.stderr.index("== work·judge#1")
    assert done.stderr.index("== work ") < first_judge < done.stderr.index("== work·judge#2")


def test_unreachable_with_nobody_answering_stops_with_exit_1_and_the_reason(
    claude_env: ScriptedServer, workspace: Path
) -> None:
    seed(workspace)
    claude_env.script(
        *keyed(LEAD, Text("Did what can be done here.")),
        *keyed(JUDGE, verdict("unreachable", "NEEDS-A-MAC: the check needs macOS, this is Linux", "hello.txt exists")),
    )
    done = flower("--timeout", "0", cwd=workspace)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert "stopped at step 'work'" in last and "NEEDS-A-MAC" in last and "nobody answered" in last
    assert "goal.md" in last and "manifest.json" in last
    assert [r["step"] for r in rows(workspace)] == ["work", "work·judge#1"]
    qa = (notes(workspace) / "qa-log.md").read_text()
    assert "unreachable" in qa and "**A** [timeout]" in qa
    assert "Picking up where it stopped" in done.stderr and "goal: 2 checks" in done.stderr


def test_piped_stdin_without_timeout_warns_and_a_question_falls_through_at_its_end(
    claude_env: ScriptedServer, workspace: Path
) -> None:
    seed(workspace, goal=False)
    (notes(workspace) / "brief.md").unlink()  # a fresh directory: the clarifier runs and asks
    claude_env.script(
        *keyed(CLARIFIER, ToolUse("mcp__human__ask", {"question": QUESTION, "options": OPTIONS}), Text(BRIEF)),
        *keyed(GOAL_SETTER, Text(GOAL)),
        *keyed(LEAD, Text("Everything is done. PIPED-DONE")),
        *keyed(JUDGE, verdict("achieved", "both checks pass")),
    )
    # stdin is an empty pipe (its end is reached at once) and there is no --timeout: the run must not hang.
    done = flower("build a greeter", cwd=workspace, input="", timeout=240)
    assert done.returncode == 0, done.stderr
    assert "stdin is not a terminal" in done.stderr and "--timeout 0" in done.stderr
    assert done.stdout.strip() == "Everything is done. PIPED-DONE"
    answer = tool_result_after(claude_env, "mcp__human__ask")
    assert answer == TIMEOUT_TEXT or answer.startswith(DECLINED_TEXT), (
        f"the question must fall through, not wait: {answer!r}"
    )
    qa = (notes(workspace) / "qa-log.md").read_text()
    assert QUESTION in qa
    assert [r["step"] for r in rows(workspace)] == ["clarify", "goal", "work", "work·judge#1"]


# --- answers from a person: a terminal and a program ---------------------------------------------


class Terminal:
    """`flower` on a pseudo-terminal (its controlling terminal): what a person at a terminal sees and types."""

    def __init__(self, args: list[str], cwd: Path) -> None:
        import pty
        import termios

        master, slave = pty.openpty()
        self.master = master

        def controlling_tty() -> None:
            import fcntl

            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        self.proc = subprocess.Popen(
            [sys.executable, "-m", "flower_cli", *args],
            cwd=cwd,
            env=env_for({"COLUMNS": "200"}),
            stdin=slave,
            stdout=subprocess.PIPE,
            stderr=slave,
            start_new_session=True,
            preexec_fn=controlling_tty,
        )
        os.close(slave)
        self._screen = ""
        self._lock = threading.Condition()
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 4096)
            except OSError:
                chunk = b""
            with self._lock:
                if not chunk:
                    self._lock.notify_all()
                    return
                self._screen += chunk.decode("utf-8", "replace")
                self._lock.notify_all()

    @property
    def screen(self) -> str:
        with self._lock:
            return self._screen

    def wait_for(self, text: str, timeout: float = 120, after: int = 0) -> int:
        deadline = time.monotonic() + timeout
        with self._lock:
            while text not in self._screen[after:]:
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None and text not in self._screen[after:]:
                    raise AssertionError(f"{text!r} never showed; the screen:\n{self._screen[-3000:]}")
                self._lock.wait(min(left, 0.2))
            return self._screen.index(text, after) + len(text)

    def type(self, text: str) -> None:
        os.write(self.master, text.encode())

    def finish(self, timeout: float = 120) -> tuple[int, str]:
        out, _ = self.proc.communicate(timeout=timeout)
        time.sleep(0.2)  # let the drain thread take the last bytes
        os.close(self.master)
        return self.proc.returncode, out.decode()


def test_a_question_answered_at_the_terminal_reaches_the_model(claude_env: ScriptedServer, workspace: Path) -> None:
    claude_env.script(
        *keyed(CLARIFIER, ToolUse("mcp__human__ask", {"question": QUESTION, "options": OPTIONS}), Text(BRIEF))
    )
    term = Terminal(["--clarify-only", "build a greeter"], workspace)
    term.wait_for("2) French")
    term.type("2\n")
    code, out = term.finish()
    assert code == 0, term.screen
    assert tool_result_after(claude_env, "mcp__human__ask") == "The person answered:\nFrench"
    assert "**A** [answered] French" in (notes(workspace) / "qa-log.md").read_text()
    assert Brief.load(notes(workspace) / "brief.md").complete
    assert [r["step"] for r in rows(workspace)] == ["clarify"]
    assert "Traceback" not in term.screen


def test_a_question_answered_through_json_stdin_reaches_the_model(claude_env: ScriptedServer, workspace: Path) -> None:
    claude_env.script(
        *keyed(CLARIFIER, ToolUse("mcp__human__ask", {"question": QUESTION, "options": OPTIONS}), Text(BRIEF))
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "flower_cli", "--json", "--clarify-only", "build a greeter"],
        cwd=workspace,
        env=env_for(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    events = []
    for line in proc.stdout:
        event = json.loads(line)
        events.append(event)
        if event["kind"] == "ask" and event["payload"].get("state") == "asked":
            assert event["payload"]["options"] == OPTIONS
            proc.stdin.write(json.dumps({"answer": event["payload"]["id"], "text": "Both, English first"}) + "\n")
            proc.stdin.flush()
        if event["kind"] == "done":
            break
    proc.stdin.close()
    assert proc.wait(timeout=120) == 0, proc.stderr.read() if proc.stderr else ""
    assert tool_result_after(claude_env, "mcp__human__ask") == "The person answered:\nBoth, English first"
    states = [e["payload"]["state"] for e in events if e["kind"] == "ask"]
    assert states == ["asked", "answered"]
    assert events[-1]["kind"] == "done" and events[-1]["ok"] is True


# --- continuity ------------------------------------------------------------------------------------


def test_killed_mid_work_wakes_in_the_same_session_and_new_starts_over(
    claude_env: ScriptedServer, workspace: Path, isolated_home: Path
) -> None:
    claude_env.script(
        *keyed(CLARIFIER, Text(BRIEF)),
        *keyed(LEAD, ToolUse("Read", {"file_path": str(workspace / "notes.txt")}), Hang()),
    )
    (workspace / "notes.txt").write_text("FIRST-LIFE notes\n")
    first = subprocess.Popen(
        [sys.executable, "-m", "flower_cli", "--no-goal", "build a greeter"],
        cwd=workspace,
        env=env_for(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    claude_env.wait_for(lambda s: sum(1 for r in s.message_requests if LEAD(r)) >= 2, timeout=180)
    # The store mirrors the transcript a moment after the harness sends the next request: kill once the
    # tool result is stored (what a crash would find after an eager flush), not before.
    deadline = time.monotonic() + 60
    while not stored(workspace, "FIRST-LIFE"):
        assert time.monotonic() < deadline, "the tool result never reached sessions.db"
        time.sleep(0.1)
    os.killpg(first.pid, signal.SIGKILL)  # the machine went down: nothing gets to clean up
    first.wait(30)
    lineage = json.loads((workspace / "runs" / "lineage.json").read_text())
    killed_session = lineage["steps"]["work"]

    claude_env.script(*keyed(LEAD, Text("Picked up: hello.txt done. SECOND-LIFE")))
    woke = flower("--no-goal", cwd=workspace)
    assert woke.returncode == 0, woke.stderr
    assert woke.stdout.strip() == "Picked up: hello.txt done. SECOND-LIFE"
    assert "Picking up where it stopped" in woke.stderr and "wake #2" in woke.stderr
    work_rows = [r for r in rows(workspace) if r["step"] == "work"]
    assert work_rows[-1]["session_id"] == killed_session, "the wake continues the killed work session"
    resumed = [r for r in claude_env.message_requests if LEAD(r)][-1]
    assert "FIRST-LIFE notes" in resumed.text, "the earlier conversation (its tool result) came back"
    assert "Carry on from where you stopped" in resumed.last_user_text
    assert [r["step"] for r in rows(workspace)].count("clarify") == 1, "the brief was reused, not asked again"

    claude_env.script(*keyed(CLARIFIER, Text(BRIEF.replace("greeter", "calculator"))))
    fresh = flower("--new", "--clarify-only", "build a calculator", cwd=workspace)
    assert fresh.returncode == 0, fresh.stderr
    archives = list((notes(workspace) / "archive").iterdir())
    assert len(archives) == 1
    assert {p.name for p in archives[0].iterdir()} == {"brief.md", "lineage.json"}
    assert "greeter" in (archives[0] / "brief.md").read_text()
    assert "calculator" in Brief.load(notes(workspace) / "brief.md").goal
    clarify_rows = [r for r in rows(workspace) if r["step"] == "clarify"]
    assert len({r["session_id"] for r in clarify_rows}) == 2, "--new clarifies in a new session"
    new_lineage = json.loads((workspace / "runs" / "lineage.json").read_text())
    assert new_lineage["woke"] == 1 and "work" not in new_lineage["steps"]
    import sqlite3

    with sqlite3.connect(workspace / "runs" / "sessions.db") as db:
        kept = db.execute("select count(*) from entries where store_key like ?", (f"%/{killed_session}",)).fetchone()[0]
    assert kept > 0, "sessions.db keeps every old transcript"


# --- talking to a running coordinator (issue 13: mail, Ctrl-C) -------------------------------------


def test_mail_sent_through_json_stdin_reaches_the_coordinator_and_the_brief(
    claude_env: ScriptedServer, workspace: Path
) -> None:
    seed(workspace, goal=False)
    mailed = threading.Event()
    answered = threading.Event()
    claude_env.script(
        *keyed(
            LEAD,
            After(lambda s: mailed.is_set() and answered.is_set(), ToolUse("mcp__human__inbox", {})),
            Text("Read the mail. MAIL-SEEN"),
        ),
        *keyed(ASIDE, Text("It is waiting on its first turn. ASIDE-ANSWER")),
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "flower_cli", "--json", "--no-goal"],
        cwd=workspace,
        env=env_for(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    events = []
    for line in proc.stdout:
        event = json.loads(line)
        events.append(event)
        if event["kind"] == "step" and event["text"] == "work":
            proc.stdin.write(json.dumps({"mail": "ALSO-EXPORT-CSV please"}) + "\n")
            proc.stdin.write(json.dumps({"aside": "SIDE-QUESTION: what is it doing?"}) + "\n")
            proc.stdin.flush()
        if event["kind"] == "aside":
            answered.set()
        if event["kind"] == "ask" and event["payload"].get("state") == "queued":
            mailed.set()
        if event["kind"] == "done":
            break
    proc.stdin.close()
    assert proc.wait(timeout=120) == 0, proc.stderr.read() if proc.stderr else ""
    assert "ALSO-EXPORT-CSV please" in tool_result_after(claude_env, "mcp__human__inbox")
    brief = Brief.load(notes(workspace) / "brief.md")
    assert brief.complete and any("ALSO-EXPORT-CSV" in a.text for a in brief.amendments)
    assert [e["payload"]["state"] for e in events if e["kind"] == "ask"] == ["queued", "delivered"]
    assert "ALSO-EXPORT-CSV" in (notes(workspace) / "qa-log.md").read_text()
    # the side question was answered beside the run, by its own runtime, and never reached the main session
    [aside] = [e for e in events if e["kind"] == "aside"]
    assert (
        aside["payload"]["ok"] is True
        and "ASIDE-ANSWER" in aside["text"]
        and aside["payload"]["question"].startswith("SIDE-QUESTION")
    )
    assert not any("SIDE-QUESTION" in r.text for r in claude_env.message_requests if LEAD(r))
    assert (workspace / "runs" / "aside" / "sessions.db").is_file()
    assert all(r["step"] == "work" for r in rows(workspace)), "the aside is not in the main manifest"


def test_a_line_typed_at_the_terminal_is_mail_for_the_coordinator_and_a_question_mark_line_an_aside(
    claude_env: ScriptedServer, workspace: Path
) -> None:
    seed(workspace, goal=False)
    term_ready = threading.Event()
    claude_env.script(
        *keyed(
            LEAD,
            After(lambda s: term_ready.is_set(), ToolUse("mcp__human__inbox", {})),
            Text("Read the mail. TERM-MAIL-SEEN"),
        ),
        *keyed(ASIDE, Text("It is reading its inbox. TERM-ASIDE-ANSWER")),
    )
    term = Terminal(["--no-goal", "Build the greeter"], workspace)
    claude_env.wait_for(lambda s: any(LEAD(r) for r in s.message_requests), timeout=180)
    term.type("ALSO-WRITE-DOCS please\n")
    mark = term.wait_for("ALSO-WRITE-DOCS")
    term.wait_for("got it", after=0)
    term.type("？WHAT-IS-IT-DOING now\n")  # the full-width question mark a CJK keyboard types: an aside, not mail
    term.wait_for("TERM-ASIDE-ANSWER", after=mark)
    term_ready.set()
    code, out = term.finish()
    assert code == 0, term.screen
    assert "Traceback" not in term.screen
    assert "ALSO-WRITE-DOCS please" in tool_result_after(claude_env, "mcp__human__inbox")
    brief = Brief.load(notes(workspace) / "brief.md")
    assert any("ALSO-WRITE-DOCS" in a.text for a in brief.amendments)
    assert not any("WHAT-IS-IT-DOING" in a.text for a in brief.amendments), "an aside is not mail"
    assert not any("WHAT-IS-IT-DOING" in r.text for r in claude_env.message_requests if LEAD(r))
    assert any("WHAT-IS-IT-DOING" in r.text for r in claude_env.message_requests if ASIDE(r))
    assert out.strip().endswith("TERM-MAIL-SEEN")


def test_ctrl_c_at_the_terminal_then_words_continue_the_session_and_a_second_ctrl_c_exits_130(
    claude_env: ScriptedServer, workspace: Path
) -> None:
    seed(workspace, goal=False)
    spoken = threading.Event()
    claude_env.script(
        *keyed(
            LEAD & when(lambda r: "FOCUS-ON-TESTS" not in r.text),
            After(lambda s: spoken.is_set(), Text("Working on part one.")),
        ),
        *keyed(LEAD & when(lambda r: "FOCUS-ON-TESTS" in r.last_user_text), Hang()),
    )
    term = Terminal(["--no-goal", "Build the greeter"], workspace)
    claude_env.wait_for(lambda s: any(LEAD(r) for r in s.message_requests), timeout=180)
    term.type("\x03")
    mark = term.wait_for("what do you want to tell it?")
    term.type("FOCUS-ON-TESTS first\n")
    term.wait_for("interrupting this round", after=mark)
    spoken.set()
    claude_env.wait_for(
        lambda s: any(LEAD(r) and "FOCUS-ON-TESTS" in r.last_user_text for r in s.message_requests), timeout=180
    )
    resumed = next(r for r in claude_env.message_requests if LEAD(r) and "FOCUS-ON-TESTS" in r.last_user_text)
    assert "Build the greeter" in resumed.text, "the same session goes on with the words"

    mark = len(term.screen)
    term.type("\x03")
    term.wait_for("what do you want to tell it?", after=mark)
    term.type("\x03")
    code, out = term.finish()
    assert code == 130, term.screen
    assert "Traceback" not in term.screen
    assert "interrupted; the step 'work' is recorded" in term.screen
    [row] = [r for r in rows(workspace) if r["step"] == "work"]
    assert row["ok"] is False and row["error"] == "interrupted-by-human" and row["interrupts"] == 1
    said = " ".join(term.screen.split())
    assert f"(session {row['session_id']}); to continue: run `flower` again in this workspace" in said, (
        "Ctrl-C's line names the session and the command that goes on, as SIGTERM's does"
    )
    lineage = json.loads((workspace / "runs" / "lineage.json").read_text())
    assert lineage["steps"]["work"] == row["session_id"]


def test_ctrl_c_in_a_pipe_exits_130_at_once(claude_env: ScriptedServer, workspace: Path) -> None:
    seed(workspace, goal=False)
    claude_env.script(*keyed(LEAD, Hang()))
    proc = subprocess.Popen(
        [sys.executable, "-m", "flower_cli", "--no-goal", "--timeout", "0"],
        cwd=workspace,
        env=env_for(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    claude_env.wait_for(lambda s: any(LEAD(r) for r in s.message_requests), timeout=180)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "interrupted; the step 'work' is recorded" in err
    [row] = rows(workspace)
    assert row["step"] == "work" and row["error"] == "interrupted-by-human"
    said = " ".join(err.split())
    assert "; to continue: run `flower` again in this workspace" in said
    if row["session_id"]:  # the harness may not have started the session before the signal
        assert f"(session {row['session_id']})" in said


# --- waking after the goal was achieved (issue 21) ---------------------------------------------------


def test_a_wake_after_the_goal_was_achieved_sends_nothing_new_words_go_on_and_new_starts_over(
    claude_env: ScriptedServer, workspace: Path
) -> None:
    seed(workspace)
    claude_env.script(
        *keyed(LEAD, Text("Round one: hello.txt and README.md written. FIRST-ROUND")),
        *keyed(JUDGE, verdict("achieved", "ACHIEVED-REASON: both checks pass")),
    )
    first = flower("--timeout", "0", cwd=workspace)
    assert first.returncode == 0, first.stderr
    assert [r["step"] for r in rows(workspace)] == ["work", "work·judge#1"]

    sent = len(claude_env.requests)
    woke = flower("--timeout", "0", cwd=workspace)
    assert woke.returncode == 0, woke.stderr
    assert len(claude_env.requests) == sent, "a wake after the goal was achieved sends no request at all"
    assert "Traceback" not in woke.stderr and woke.stdout == ""
    said = " ".join(woke.stderr.split())
    assert "the goal was achieved on" in said and "'work·judge#1'" in said and "manifest.json" in said
    assert "2 checks" in said and "--new" in said
    assert [r["step"] for r in rows(workspace)] == ["work", "work·judge#1"], "nothing was recorded"

    as_json = flower("--json", "--timeout", "0", "hello.txt exists and says hello", cwd=workspace)  # in the brief
    assert as_json.returncode == 0, as_json.stderr
    [done] = [json.loads(line) for line in as_json.stdout.splitlines() if '"done"' in line]
    assert done["ok"] is True and done["verdict"]["step"] == "work·judge#1"
    assert "ACHIEVED-REASON" in done["verdict"]["reason"]
    assert len(claude_env.requests) == sent

    # New words amend the brief and the run goes on in the same work session.
    claude_env.script(
        *keyed(GOAL_SETTER, Text(GOAL)),
        *keyed(LEAD, Text("Added the farewell too. SECOND-ROUND")),
        *keyed(JUDGE, verdict("achieved", "all checks pass again")),
    )
    more = flower("--timeout", "0", "also say goodbye in bye.txt", cwd=workspace)
    assert more.returncode == 0, more.stderr
    assert more.stdout.strip() == "Added the farewell too. SECOND-ROUND"
    assert "also say goodbye in bye.txt" in (notes(workspace) / "brief.md").read_text()
    work = [r for r in rows(workspace) if r["step"] == "work"]
    assert len(work) == 2 and work[0]["session_id"] == work[1]["session_id"]

    # --new starts over even though the goal was achieved.
    claude_env.script(*keyed(CLARIFIER, Text(BRIEF.replace("greeter", "calculator"))))
    fresh = flower("--new", "--clarify-only", "build a calculator", cwd=workspace)
    assert fresh.returncode == 0, fresh.stderr
    assert "calculator" in Brief.load(notes(workspace) / "brief.md").goal
    assert claude_env.unscripted == [] and claude_env.rejected == []


# --- a step that produces nothing says why (issue 21) ---------------------------------------------------


def test_a_clarifier_that_writes_no_brief_says_what_is_missing_and_the_row_carries_it(
    claude_env: ScriptedServer, workspace: Path
) -> None:
    chatter = Text("I looked around. The goal is a greeter; I think that is all. NO-BRIEF-HERE")
    claude_env.script(*keyed(CLARIFIER, chatter, chatter, chatter))
    done = flower("--timeout", "0", "build a greeter", cwd=workspace)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    last = " ".join(done.stderr.strip().splitlines()[-1:])
    assert "stopped at step 'clarify'" in last and "no usable brief" in last
    assert "Acceptance criteria" in last and "Boundaries" in last, "which sections are missing"
    assert "NO-BRIEF-HERE" in last, "the model's last words, shortened"
    assert "manifest.json" in last and "flower sessions show" in last
    manifest = rows(workspace)
    assert [r["step"] for r in manifest] == ["clarify", "clarify#round2", "clarify#round3"]
    assert manifest[-1]["ok"] is False and "no usable brief" in manifest[-1]["error"]
    assert not (notes(workspace) / "brief.md").exists()
    assert claude_env.unscripted == [] and claude_env.rejected == []


def test_a_goal_setter_that_writes_no_goal_says_why_and_a_resumed_one_is_started_fresh_once(
    claude_env: ScriptedServer, workspace: Path
) -> None:
    seed(workspace, goal=False)
    junk = Text("The goal is clear enough. NO-GOAL-HERE")
    claude_env.script(*keyed(GOAL_SETTER, junk, junk))
    done = flower("--timeout", "0", cwd=workspace)
    assert done.returncode == 1, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert "stopped at step 'goal'" in last and "no usable goal" in last and "Checks" in last
    assert "NO-GOAL-HERE" in last and "manifest.json" in last
    first_rows = rows(workspace)
    assert [r["step"] for r in first_rows] == ["goal", "goal#round2"]
    assert first_rows[-1]["ok"] is False and "no usable goal" in first_rows[-1]["error"]
    stuck = json.loads((workspace / "runs" / "lineage.json").read_text())["steps"]["goal"]

    # The next wake resumes that session; when it again gives nothing, the step starts once in a fresh session.
    claude_env.script(
        *keyed(GOAL_SETTER & when(lambda r: "NO-GOAL-HERE" in r.text), junk, junk),
        *keyed(GOAL_SETTER & when(lambda r: "NO-GOAL-HERE" not in r.text), Text(GOAL)),
        *keyed(LEAD, Text("Built it. WORK-DONE")),
        *keyed(JUDGE, verdict("achieved", "both checks pass")),
    )
    woke = flower("--timeout", "0", cwd=workspace)
    assert woke.returncode == 0, woke.stderr
    assert woke.stdout.strip() == "Built it. WORK-DONE"
    said = " ".join(woke.stderr.split())
    assert stuck in said and "fresh session" in said, "the fresh start is said"
    second = rows(workspace)[len(first_rows) :]
    assert [r["step"] for r in second] == ["goal", "goal#round2", "goal#fresh", "work", "work·judge#1"]
    assert second[0]["session_id"] == stuck and second[2]["session_id"] != stuck
    assert Goal.load(notes(workspace) / "goal.md").complete
    assert claude_env.unscripted == [] and claude_env.rejected == []
