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
