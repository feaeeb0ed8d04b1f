"""The terminal view's manners: nothing a person must read is clipped (80 and 120 columns), colour follows
--color / NO_COLOR / FORCE_COLOR, lines redrawn in place may be shortened in the middle."""

from __future__ import annotations

import io
from typing import Any

import pytest

from flower_cli.runtime import Event
from flower_cli.view import Renderer, shorten_middle, terminal_width, use_color

LONG_PATH = "/home/someone/projects/" + "a-very-long-folder-name/" * 6 + "manifest.json.corrupt-20250101-120000"
SENTENCE = (
    "the manifest could not be read and was moved aside, nothing in it is lost; the run goes on with a new one "
    "and the old rows stay in the moved file for you to look at"
)


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _words(lines: list[str]) -> list[str]:
    return " ".join(lines).split()


@pytest.mark.parametrize("columns", [80, 120])
def test_messages_wrap_at_the_terminal_width_and_lose_nothing(columns: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", str(columns))
    out = io.StringIO()
    view = Renderer(out, color=False)
    assert view.width == min(columns, 110)
    denial = "Permission to use Bash with command rm -rf / has been denied by the role's rules: " + SENTENCE
    messages = [
        Event("notice", f"{SENTENCE}: {LONG_PATH}"),
        Event("tool_result", denial, payload={"is_error": True}),
        Event("error", SENTENCE),
        Event("retry", SENTENCE),
    ]
    for event in messages:
        out.seek(0)
        out.truncate()
        view(event)
        lines = out.getvalue().splitlines()
        assert len(lines) > 1, "a message longer than the width wraps"
        for line in lines:
            # only a word longer than the width (the path) may pass it, and then it is alone on its line
            assert len(line) <= view.width or " " not in line.strip(), line
        assert "..." not in out.getvalue() and "…" not in out.getvalue()
        assert _words(lines)[1:] == event.text.split(), "every word is there, in order"
        assert LONG_PATH in out.getvalue() or LONG_PATH not in event.text, "a path is never broken"
    # the Ctrl-C prompt and the probe's verdict are plain lines: they wrap the same way
    out.seek(0)
    out.truncate()
    prompt = (
        "\n! Ctrl-C: what do you want to tell it? Your words interrupt this round and the same session goes on "
        "with them. (Enter = say nothing, it goes on; Ctrl-C again = quit)"
    )
    view.line(prompt, "yellow")
    assert _words(out.getvalue().splitlines()) == prompt.split()
    assert all(len(line) <= view.width for line in out.getvalue().splitlines())


def test_the_width_comes_from_the_terminal_the_view_writes_to(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "93")
    assert terminal_width(io.StringIO()) == 93
    monkeypatch.setenv("COLUMNS", "oops")
    assert terminal_width(io.StringIO()) > 0


def test_a_pipe_keeps_each_message_one_line_a_terminal_folds_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    piped, terminal = io.StringIO(), FakeTerminal()
    for stream in (piped, terminal):
        Renderer(stream, color=False).line(f"  ! {SENTENCE}: {LONG_PATH}")
    assert piped.getvalue() == f"  ! {SENTENCE}: {LONG_PATH}\n", "one line for grep and logs"
    assert len(terminal.getvalue().splitlines()) > 1


def test_shorten_middle_keeps_both_ends() -> None:
    assert shorten_middle("short", 10) == "short"
    cut = shorten_middle(LONG_PATH, 40)
    assert len(cut) == 40 and cut.startswith("/home/someone") and cut.endswith("120000") and "…" in cut


@pytest.mark.parametrize(
    ("mode", "env", "terminal", "expected"),
    [
        ("auto", {}, True, True),
        ("auto", {}, False, False),
        ("auto", {"NO_COLOR": "1"}, True, False),
        ("auto", {"NO_COLOR": ""}, True, True),  # only a non-empty value counts
        ("auto", {"FORCE_COLOR": "1"}, False, True),
        ("auto", {"FORCE_COLOR": ""}, False, False),
        ("auto", {"NO_COLOR": "1", "FORCE_COLOR": "1"}, True, False),  # the opt-out wins
        ("always", {"NO_COLOR": "1"}, False, True),  # the flag wins over both variables
        ("never", {"FORCE_COLOR": "1"}, True, False),
    ],
)
def test_use_color(
    mode: str, env: dict[str, str], terminal: bool, expected: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("NO_COLOR", "FORCE_COLOR"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    stream: Any = FakeTerminal() if terminal else io.StringIO()
    assert use_color(stream, mode) is expected
    if mode == "auto":  # a renderer left to decide decides the same way
        view = Renderer(stream)
        view.line("x", "red")
        assert ("\x1b[31m" in stream.getvalue()) is expected


def test_an_endpoint_not_back_in_time_is_exit_4_after_one_line(
    isolated_home: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket

    from flower_cli._shared.exits import Exit
    from flower_cli.cli.actions.reach import reach_endpoint
    from flower_resilience import Resilience

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{port}")
    out = io.StringIO()
    with pytest.raises(Exit) as stopped:
        reach_endpoint(Renderer(out, color=False), policy=Resilience(max_offline_wait=0.5))
    assert stopped.value.code == 4 and "not back within" in stopped.value.message
    [line] = out.getvalue().splitlines()
    assert f"cannot reach 127.0.0.1:{port}: connection refused" in line and "waiting up to 0.5 s" in line


# --- the heartbeat ------------------------------------------------------------------------------------------


def _quiet_ticker(view: Renderer) -> Renderer:
    view._heartbeat.tick = 3600.0  # the test drives the beats itself, with its own clock
    return view


def _bash(call_id: str = "t1", command: str = 'python3 -c "import time; time.sleep(3)"') -> Event:
    return Event("tool_call", command, tool="Bash", payload={"id": call_id, "input": {"command": command}})


def test_the_heartbeat_on_a_terminal_is_one_line_redrawn_in_place() -> None:
    import time

    screen = FakeTerminal()
    view = _quiet_ticker(Renderer(screen, color=False, live=True))
    now = time.monotonic()
    view(_bash())
    screen.seek(0)
    screen.truncate()
    view._heartbeat.beat(now + 1.0)
    assert screen.getvalue() == "", "a short wait shows nothing"
    view._heartbeat.beat(now + 2.5)
    drawn = screen.getvalue()
    assert drawn.startswith("\r\x1b[K") and "\n" not in drawn, "in place: no newline"
    assert 'running Bash python3 -c "import time; time.sleep(3)" · 0:02' in drawn
    view._heartbeat.beat(now + 3.0)
    assert screen.getvalue() == drawn, "at most one redraw every couple of seconds"
    view._heartbeat.beat(now + 4.6)
    assert screen.getvalue().count("\r\x1b[K") == 2 and "· 0:04" in screen.getvalue()
    # a line written meanwhile erases the heartbeat first: it never mixes with a message
    screen.seek(0)
    screen.truncate()
    view.line("  ! something to read")
    assert screen.getvalue() == "\r\x1b[K  ! something to read\n"
    view(Event("tool_result", "ok", payload={"tool_use_id": "t1"}))
    screen.seek(0)
    screen.truncate()
    view._heartbeat.beat(now + 9.0)
    assert screen.getvalue() == "", "the tool is done: no heartbeat"


def test_the_heartbeat_is_shortened_in_the_middle_to_fit(monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    monkeypatch.setenv("COLUMNS", "60")
    screen = FakeTerminal()
    view = _quiet_ticker(Renderer(screen, color=False, live=True))
    view(_bash(command="cat " + LONG_PATH))
    view._heartbeat.beat(time.monotonic() + 3)
    drawn = screen.getvalue().split("\r\x1b[K")[-1]
    assert len(drawn) == 59 and "…" in drawn and drawn.startswith("  … running Bash cat /home")


def test_the_heartbeat_into_a_pipe_is_a_plain_line_a_minute(monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    log = io.StringIO()
    view = _quiet_ticker(Renderer(log, color=False))
    assert not view.live
    now = time.monotonic()
    view(_bash())
    log.seek(0)
    log.truncate()
    view._heartbeat.beat(now + 30)
    assert log.getvalue() == ""
    view._heartbeat.beat(now + 61)
    view._heartbeat.beat(now + 62)
    [line] = log.getvalue().splitlines()
    assert "running Bash" in line and " · 1:0" in line and "\r" not in log.getvalue()


def test_the_heartbeat_hides_while_a_question_waits_and_shows_retries() -> None:
    import time

    screen = FakeTerminal()
    view = _quiet_ticker(Renderer(screen, color=False, live=True))
    now = time.monotonic()
    view(Event("tool_call", "", tool="mcp__flower__ask", payload={"id": "ask1", "input": {}}))
    view(Event("ask", "Which database?", payload={"id": "q1", "state": "asked"}))
    screen.seek(0)
    screen.truncate()
    view._heartbeat.beat(now + 5)
    assert screen.getvalue() == "", "the person is typing an answer: nothing is redrawn over it"
    view(Event("ask", "Which database?", payload={"id": "q1", "state": "answered", "answer": "sqlite"}))
    view(Event("tool_result", "sqlite", payload={"tool_use_id": "ask1"}))
    # the harness retrying a request: said once as a line, then its attempts in the heartbeat
    screen.seek(0)
    screen.truncate()
    retry = {"subtype": "api_retry", "max_retries": 10, "error_status": 529, "error": "overloaded"}
    view(Event("system", "api_retry", payload={**retry, "attempt": 1}))
    view(Event("system", "api_retry", payload={**retry, "attempt": 2}))
    assert screen.getvalue().count("Claude Code retries it, up to 10 times") == 1
    view._heartbeat.beat(time.monotonic() + 3)
    assert "request failed (HTTP 529), Claude Code retries: attempt 2 of 10" in screen.getvalue()
    view(Event("text", "here it is"))
    screen.seek(0)
    screen.truncate()
    view._heartbeat.beat(time.monotonic() + 6)
    assert screen.getvalue() == "", "an answer came through: the retry is over"
    # flower's own retry loop: a backoff, then the resume
    view(Event("retry", "retrying in 4 s", payload={"kind": "backoff", "attempt": 1, "wait_s": 4.0}))
    view._heartbeat.beat(time.monotonic() + 3)
    assert "attempt 1 failed; attempt 2 in 4 s" in screen.getvalue()
    view(Event("retry", "resuming", payload={"kind": "resumed", "attempt": 2}))
    assert view.heartbeat(time.monotonic() + 10) is None


def test_the_harness_log_appends_counts_visible_lines_and_never_raises(tmp_path: Any) -> None:
    import stat

    from flower_cli.runtime._harness_log import HarnessLog

    log = HarnessLog(tmp_path / "harness.log")
    log.write("\x1b[?25h")  # a bare cursor code: kept, not counted
    log.write("warning: something the harness wanted to say")
    assert log.lines == 1
    text = (tmp_path / "harness.log").read_text()
    assert text.startswith("--- ") and text.count("--- ") == 1 and "something the harness wanted to say" in text
    assert stat.S_IMODE((tmp_path / "harness.log").stat().st_mode) == 0o600
    gone = HarnessLog(tmp_path / "missing-dir" / "harness.log")
    gone.write("lost")  # no folder: dropped quietly, the run goes on
    assert gone.lines == 0
