"""Counted nouns read as English everywhere flower counts something: "1 turn", "2 turns", "1 tool call"; and a
judge's words sit under a header of their own, not under the step it judges."""

from __future__ import annotations

import io

from flower_cli import Event
from flower_cli._shared.words import counted
from flower_cli.view import Renderer


def test_counted_is_singular_for_exactly_one() -> None:
    assert counted(1, "turn") == "1 turn"
    assert [counted(n, "tool call") for n in (0, 2)] == ["0 tool calls", "2 tool calls"]
    assert counted(1, "retry", "retries") == "1 retry" and counted(3, "retry", "retries") == "3 retries"


def test_a_one_turn_step_closes_with_1_turn() -> None:
    out = io.StringIO()
    view = Renderer(out, color=False)
    view(Event("result", "success", payload={"cost_usd": 0.01, "num_turns": 1, "is_error": False}))
    view(Event("result", "success", payload={"cost_usd": 0.01, "num_turns": 2, "is_error": False}))
    lines = out.getvalue().splitlines()
    assert "+ done: 1 turn ·" in lines[0] and "+ done: 2 turns ·" in lines[1]


def test_a_side_session_gets_its_own_header_without_a_step_number() -> None:
    out = io.StringIO()
    view = Renderer(out, color=False)
    view(Event("step", "work", payload={"index": 3, "total": 3}))
    view(Event("text", "Round one done."))
    view(Event("step", "work·judge#1", payload={"side": True, "note": "judge · a fresh session"}))
    view(Event("text", "## Verdict\nnot yet"))
    screen = out.getvalue()
    work, judge = screen.index("== work "), screen.index("== work·judge#1 ")
    assert work < screen.index("Round one done.") < judge < screen.index("## Verdict")
    header = screen[judge:].splitlines()[0]
    assert header.endswith("judge · a fresh session") and "/3" not in header
