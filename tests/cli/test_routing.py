"""Where a typed line goes while a run works (terminal lines and --json lines)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from flower_cli.go import route_eof, route_json, route_line
from flower_cli.go._human import Ask
from flower_cli.go._routing import Answer, Aside, Decline, Ignore, Invalid, Route, SendMail


@dataclass
class Pending:
    id: str
    options: tuple[str, ...] = ()


Q3 = Pending("q3", ("SQLite", "Postgres", "none"))
Q4 = Pending("q4")


@pytest.mark.parametrize(
    ("line", "pending", "route"),
    [
        ("", [Q3, Q4], Decline("q3")),  # the oldest pending question is the one on screen
        ("   ", [], Ignore()),
        ("?what is it doing", [Q3], Aside("what is it doing")),
        ("？现在进度如何", [Q3], Aside("现在进度如何")),  # bug 2: the full-width mark became mail
        ("  ? spaced  ", [], Aside("spaced")),
        ("?", [], Ignore("type the side question right after the ?")),
        ("2", [Q3], Answer("q3", "Postgres")),
        ("２", [Q3], Answer("q3", "Postgres")),
        ("4", [Q3], Answer("q3", "4")),  # out of range: the number is the answer
        ("0", [Q3], Answer("q3", "0")),
        ("1", [Q4], Answer("q4", "1")),  # no options
        ("use SQLite, but keep it swappable", [Q3], Answer("q3", "use SQLite, but keep it swappable")),
        ("also export CSV", [], SendMail("also export CSV")),
        ("2", [], SendMail("2")),
    ],
)
def test_route_line(line: str, pending: list[Pending], route: Route) -> None:
    assert route_line(line, pending) == route


def test_route_line_accepts_the_channels_own_questions() -> None:
    ask = Ask("q1", "Which?", ("a", "b"))
    assert route_line("2", [ask]) == Answer("q1", "b")


def test_end_of_input_declines_everything_pending() -> None:
    assert route_eof([Q3, Q4]) == [Decline("q3", "input closed"), Decline("q4", "input closed")]
    assert route_eof([]) == []


@pytest.mark.parametrize(
    ("line", "route"),
    [
        ('{"answer": "q3", "text": "SQLite"}', Answer("q3", "SQLite")),
        ('{"answer": "q3", "option": 2}', Answer("q3", "Postgres")),
        ('{"decline": "q4", "reason": "no idea"}', Decline("q4", "no idea")),
        ('{"decline": "q4"}', Decline("q4")),
        ('{"mail": "also CSV"}', SendMail("also CSV")),
        ('{"aside": "how far along?"}', Aside("how far along?")),
        ("", Ignore()),
    ],
)
def test_route_json(line: str, route: Route) -> None:
    assert route_json(line, [Q3, Q4]) == route


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("answer q3 SQLite", "not JSON"),
        ("[1, 2]", "expected a JSON object, got list"),
        ('{"text": "SQLite"}', "exactly one action"),
        ('{"answer": "q3", "mail": "x", "text": "y"}', "answer and mail"),
        ('{"answer": "q9", "text": "x"}', "q9 is not waiting for an answer (pending: q3, q4)"),
        ('{"answer": "q3"}', 'needs "text"'),
        ('{"answer": "q3", "text": "  "}', 'needs "text"'),
        ('{"answer": "q3", "option": 7}', "from 1 to 3"),
        ('{"answer": "q3", "option": true}', "from 1 to 3"),
        ('{"answer": "q4", "option": 1}', "has no options"),
        ('{"answer": 3, "text": "x"}', "id of a pending question"),
        ('{"mail": ""}', "non-empty string"),
        ('{"aside": 5}', "non-empty string"),
    ],
)
def test_bad_json_lines_are_one_line_errors(line: str, says: str) -> None:
    route = route_json(line, [Q3, Q4])
    assert isinstance(route, Invalid)
    assert says in route.error and "\n" not in route.error
