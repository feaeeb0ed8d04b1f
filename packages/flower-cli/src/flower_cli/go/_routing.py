"""Where a line the person types while a run works goes: pure decisions, no I/O.

Terminal lines (`route_line`):

* empty → decline the oldest pending question (or nothing, when none is pending);
* ``?question`` or ``？question`` (full-width, as a CJK keyboard types it) → an aside:
  a side question answered by a read-only runtime, never sent to the run;
* a number within the options of the pending question → that option;
* any other text while a question is pending → its answer;
* anything else → mail for the run (appended to the brief, delivered at its next ``inbox``).

JSON lines for ``--json`` mode (`route_json`), one object per line::

    {"answer": "q3", "text": "use SQLite"}     {"answer": "q3", "option": 2}
    {"decline": "q3", "reason": "no idea"}     {"mail": "also export CSV"}
    {"aside": "what is it doing right now?"}

A bad line becomes `Invalid` with a one-line message, never an exception. The caller (the CLI) carries out
the decision on the `flower_cli.HumanChannel` and the aside runtime.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = [
    "Answer",
    "Aside",
    "Decline",
    "Ignore",
    "Invalid",
    "PendingQuestion",
    "Route",
    "SendMail",
    "route_eof",
    "route_json",
    "route_line",
]


class PendingQuestion(Protocol):
    """What routing needs of a pending question (`flower_cli.go._human.Ask` fits)."""

    @property
    def id(self) -> str: ...

    @property
    def options(self) -> Sequence[str]: ...


@dataclass(frozen=True)
class Answer:
    id: str
    text: str


@dataclass(frozen=True)
class Decline:
    id: str
    reason: str = ""


@dataclass(frozen=True)
class SendMail:
    text: str


@dataclass(frozen=True)
class Aside:
    question: str


@dataclass(frozen=True)
class Ignore:
    """Nothing to do (an empty line with nothing pending, a bare ``?``); ``note`` may be shown."""

    note: str = ""


@dataclass(frozen=True)
class Invalid:
    """A JSON line that cannot be carried out; ``error`` is one line saying what is wrong and what to send."""

    error: str


Route = Answer | Decline | SendMail | Aside | Ignore | Invalid

_ASIDE_MARKS = ("?", "？")
_JSON_HELP = 'send one JSON object per line, e.g. {"answer": "q3", "text": "…"}, {"decline": "q3"}, {"mail": "…"} or {"aside": "…"}'


def _option(text: str, options: Sequence[str]) -> str | None:
    """The option a typed number picks ("2", "２", " 2 "), if it is one within range."""
    digits = unicodedata.normalize("NFKC", text).strip()
    if digits.isdigit() and options:
        n = int(digits)
        if 1 <= n <= len(options):
            return options[n - 1]
    return None


def route_line(line: str, pending: Sequence[PendingQuestion] = ()) -> Route:
    """Route one terminal line. ``pending`` are the waiting questions, oldest first; the oldest is answered."""
    text = line.strip()
    oldest = pending[0] if pending else None
    if not text:
        return Decline(oldest.id) if oldest is not None else Ignore()
    if text.startswith(_ASIDE_MARKS):
        question = text[1:].strip()
        return Aside(question) if question else Ignore("type the side question right after the ?")
    if oldest is None:
        return SendMail(text)
    picked = _option(text, oldest.options)
    return Answer(oldest.id, picked if picked is not None else text)


def route_eof(pending: Sequence[PendingQuestion] = ()) -> list[Decline]:
    """Input ended: every pending question is declined (the channel should also stop listening)."""
    return [Decline(q.id, "input closed") for q in pending]


def _string(data: dict[str, Any], key: str) -> str | None:
    value = data.get(key)
    return value.strip() if isinstance(value, str) else None


def route_json(line: str, pending: Sequence[PendingQuestion] = ()) -> Route:
    """Route one ``--json`` stdin line (see the module docstring for the forms)."""
    if not line.strip():
        return Ignore()
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        return Invalid(f"not JSON ({exc.msg} at column {exc.colno}); {_JSON_HELP}")
    if not isinstance(data, dict):
        return Invalid(f"expected a JSON object, got {type(data).__name__}; {_JSON_HELP}")
    actions = [key for key in ("answer", "decline", "mail", "aside") if key in data]
    if len(actions) != 1:
        named = " and ".join(actions) if actions else "none of answer/decline/mail/aside"
        return Invalid(f"a line needs exactly one action, this one has {named}; {_JSON_HELP}")
    action = actions[0]
    if action in ("mail", "aside"):
        text = _string(data, action)
        if not text:
            return Invalid(f'"{action}" needs a non-empty string')
        return SendMail(text) if action == "mail" else Aside(text)

    ask_id = _string(data, action)
    if not ask_id:
        return Invalid(f'"{action}" needs the id of a pending question, e.g. "q3"')
    question = next((q for q in pending if q.id == ask_id), None)
    if question is None:
        waiting = ", ".join(q.id for q in pending) or "none"
        return Invalid(f"{ask_id} is not waiting for an answer (pending: {waiting})")
    if action == "decline":
        return Decline(ask_id, _string(data, "reason") or "")
    if "option" in data:
        number = data["option"]
        count = len(question.options)
        if isinstance(number, bool) or not isinstance(number, int) or not 1 <= number <= count:
            return Invalid(
                f'"option" for {ask_id} must be a number from 1 to {count}'
                if count
                else f'{ask_id} has no options; send "text"'
            )
        return Answer(ask_id, question.options[number - 1])
    text = _string(data, "text")
    if not text:
        return Invalid(f'an answer to {ask_id} needs "text" (or "option": N)')
    return Answer(ask_id, text)
