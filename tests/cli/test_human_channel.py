"""The human channel on its own: quota, timeouts, declines, answers from another thread, mail, the log."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from flower_cli import Brief, Event, HumanChannel
from flower_cli.go._human import DECLINED_TEXT, INVALID_TEXT, OVER_BUDGET_TEXT, TIMEOUT_TEXT


def _states(events: list[Event], kind: str = "question") -> list[tuple[str, str]]:
    return [(e.payload["id"], e.payload["state"]) for e in events if e.kind == "ask" and e.payload["kind"] == kind]


def _answer_when_asked(channel: HumanChannel, act: Callable[[str], object]) -> threading.Thread:
    """A person on another thread: waits for the next question, then acts on its id."""
    asked = threading.Event()
    previous = channel.on_event

    def watch(event: Event) -> None:
        if previous is not None:
            previous(event)
        if event.payload.get("state") == "asked":
            asked.set()

    channel.on_event = watch

    def person() -> None:
        assert asked.wait(30), "the question never showed up"
        act(channel.pending()[0].id)

    thread = threading.Thread(target=person, daemon=True)
    thread.start()
    return thread


async def test_an_answer_from_another_thread(tmp_path: Path) -> None:
    events: list[Event] = []
    log = tmp_path / "notes" / "qa-log.md"
    channel = HumanChannel(on_event=events.append, log_path=log, timeout_s=60)
    results: list[bool] = []
    person = _answer_when_asked(channel, lambda qid: results.append(channel.answer(qid, "  SQLite  ")))
    reply = await channel.ask("  Which database?  ", ["SQLite", " ", "Postgres"])
    person.join(10)
    assert reply == "The person answered:\nSQLite"
    assert results == [True]
    assert _states(events) == [("q1", "asked"), ("q1", "answered")]
    assert events[-1].text == "Which database?" and events[-1].payload["answer"] == "SQLite"
    assert channel.asks[0].options == ("SQLite", "Postgres") and channel.pending() == []
    record = log.read_text(encoding="utf-8")
    assert record.startswith("# Questions and answers\n\n> Appended automatically")
    assert "Which database?" in record and "  - options: SQLite / Postgres\n  - **A** [answered] SQLite\n" in record


async def test_an_answer_given_on_the_event_loop_thread_itself() -> None:
    # A UI that answers synchronously from on_event (same thread as the waiting tool call) must not hang.
    channel = HumanChannel(timeout_s=30)
    channel.on_event = lambda e: (
        channel.answer(e.payload["id"], "right away") if e.payload.get("state") == "asked" else None
    )
    assert await channel.ask("now?") == "The person answered:\nright away"


async def test_answering_never_waits_for_a_busy_event_loop() -> None:
    # The loop thread is blocked (a UI callback waiting for the person's thread) while that thread answers:
    # answer() must return without needing the loop, or the two would wait for each other forever.
    channel = HumanChannel(timeout_s=30)
    returned: list[bool] = []

    def on_event(event: Event) -> None:
        if event.payload.get("state") == "asked":
            person = threading.Thread(target=lambda: returned.append(channel.answer(event.payload["id"], "ok")))
            person.start()
            person.join(10)  # blocks the event loop thread until answer() has returned
            finished_while_blocked.append(not person.is_alive())

    finished_while_blocked: list[bool] = []
    channel.on_event = on_event
    assert await channel.ask("busy?") == "The person answered:\nok"
    assert returned == [True] and finished_while_blocked == [True]


async def test_decline_with_a_reason_and_an_empty_answer_declines() -> None:
    channel = HumanChannel(timeout_s=60)
    _answer_when_asked(channel, lambda qid: channel.decline(qid, "no idea"))
    assert await channel.ask("Which port?") == DECLINED_TEXT + " (They said: no idea)"
    _answer_when_asked(channel, lambda qid: channel.answer(qid, "   "))
    assert await channel.ask("Which host?") == DECLINED_TEXT
    assert [a.state for a in channel.asks] == ["declined", "declined"]


async def test_settled_or_unknown_questions_cannot_be_answered() -> None:
    channel = HumanChannel(timeout_s=60)
    _answer_when_asked(channel, lambda qid: channel.answer(qid, "yes"))
    await channel.ask("ok?")
    assert not channel.answer("q1", "again") and not channel.decline("q1") and not channel.answer("q9", "x")


async def test_quota_counts_only_real_questions(tmp_path: Path) -> None:
    # Empty and over-quota questions do not use up the quota, and questions and mail are numbered apart.
    events: list[Event] = []
    channel = HumanChannel(on_event=events.append, max_asks=1, timeout_s=0, log_path=tmp_path / "log.md")
    assert channel.remaining == 1
    assert await channel.ask("   ") == INVALID_TEXT
    assert channel.remaining == 1
    assert await channel.ask("Real question?") == TIMEOUT_TEXT
    assert channel.remaining == 0
    assert await channel.ask("Another?") == OVER_BUDGET_TEXT
    assert await channel.ask("And another?") == OVER_BUDGET_TEXT
    assert channel.remaining == 0
    assert _states(events) == [("q1", "invalid"), ("q2", "timeout"), ("q3", "over_budget"), ("q4", "over_budget")]
    mail = channel.send("also CSV")
    assert mail is not None and mail.id == "m1"
    record = (tmp_path / "log.md").read_text(encoding="utf-8")
    assert "**A** [over budget]" in record and "(empty question)" in record


async def test_no_questions_at_all_and_no_cap() -> None:
    none = HumanChannel(max_asks=0, timeout_s=0)
    assert await none.ask("May I?") == OVER_BUDGET_TEXT
    unlimited = HumanChannel(timeout_s=0)
    assert unlimited.remaining == -1
    for _ in range(5):
        assert await unlimited.ask("?") == TIMEOUT_TEXT
    with pytest.raises(ValueError, match="max_asks"):
        HumanChannel(max_asks=-1)


async def test_timeout_zero_falls_through_with_the_question_text() -> None:
    # The event of a question that fell through carries its text, so a UI can show what was skipped.
    events: list[Event] = []
    channel = HumanChannel(on_event=events.append, timeout_s=0)
    started = time.monotonic()
    reply = await channel.ask("Which database?", ["SQLite"])
    assert time.monotonic() - started < 5
    assert reply == TIMEOUT_TEXT and "record the assumption" in reply
    assert [e.payload["state"] for e in events] == ["timeout"]  # no "asked": nobody was asked
    assert events[0].text == "Which database?" and events[0].payload["options"] == ["SQLite"]


async def test_a_question_times_out_when_nobody_answers() -> None:
    events: list[Event] = []
    channel = HumanChannel(on_event=events.append, timeout_s=0.2)
    assert await channel.ask("Anyone?") == TIMEOUT_TEXT
    assert _states(events) == [("q1", "asked"), ("q1", "timeout")]
    assert channel.pending() == [] and not channel.answer("q1", "late")


async def test_timeout_none_waits_until_answered() -> None:
    channel = HumanChannel(timeout_s=None)
    person = _answer_when_asked(channel, lambda qid: (time.sleep(0.3), channel.answer(qid, "eventually")))
    assert await channel.ask("Take your time") == "The person answered:\neventually"
    person.join(10)


async def test_cancelled_question_is_closed_and_logged(tmp_path: Path) -> None:
    events: list[Event] = []
    channel = HumanChannel(on_event=events.append, timeout_s=None, log_path=tmp_path / "log.md")
    with anyio.move_on_after(0.2):
        await channel.ask("Still there?")
    assert channel.pending() == [] and channel.asks[0].state == "cancelled"
    assert _states(events) == [("q1", "asked"), ("q1", "cancelled")]
    assert not channel.answer("q1", "too late")
    assert "**A** [cancelled]" in (tmp_path / "log.md").read_text(encoding="utf-8")


async def test_two_questions_pending_at_once_are_answered_independently() -> None:
    channel = HumanChannel(timeout_s=30)
    replies: dict[str, str] = {}

    async def ask(question: str) -> None:
        replies[question] = await channel.ask(question)

    def person() -> None:
        deadline = time.monotonic() + 30
        while len(channel.pending()) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        first, second = channel.pending()
        channel.answer(second.id, "B")
        channel.answer(first.id, "A")

    thread = threading.Thread(target=person, daemon=True)
    thread.start()
    async with anyio.create_task_group() as tg:
        tg.start_soon(ask, "first?")
        tg.start_soon(ask, "second?")
    thread.join(10)
    assert replies == {"first?": "The person answered:\nA", "second?": "The person answered:\nB"}


async def test_stop_listening_declines_pending_and_later_questions_fall_through() -> None:
    # Bug 16: with stdin at its end, questions used to wait out the whole timeout.
    events: list[Event] = []
    channel = HumanChannel(on_event=events.append, timeout_s=3600)
    _answer_when_asked(channel, lambda qid: channel.stop_listening("input closed"))
    assert await channel.ask("Anyone?") == DECLINED_TEXT + " (They said: input closed)"
    assert not channel.listening
    started = time.monotonic()
    assert await channel.ask("Later?") == TIMEOUT_TEXT
    assert time.monotonic() - started < 5
    assert _states(events)[-1] == ("q2", "timeout") and events[-1].payload["reason"] == "input closed"


async def test_a_broken_ui_does_not_break_the_question() -> None:
    def explode(event: Event) -> None:
        raise RuntimeError("renderer bug")

    channel = HumanChannel(on_event=explode, timeout_s=0)
    assert await channel.ask("Q?") == TIMEOUT_TEXT
    assert [type(e) for e in channel.ui_errors] == [RuntimeError]


def test_mail_is_amended_logged_when_queued_and_when_delivered(tmp_path: Path) -> None:
    # Mail is logged when it is queued too: mail the run never picks up must still be in the record.
    brief = tmp_path / "notes" / "brief.md"
    log = tmp_path / "notes" / "qa-log.md"
    Brief(goal="g", acceptance="a", boundaries="b", unknowns="u").write(brief)
    events: list[Event] = []
    channel = HumanChannel(on_event=events.append, log_path=log, amend_path=brief)
    assert channel.send("   ") is None
    senders = [threading.Thread(target=channel.send, args=(f"note {i}",)) for i in range(3)]
    for t in senders:
        t.start()
    for t in senders:
        t.join()
    assert sorted(m.id for m in channel.mail) == ["m1", "m2", "m3"]
    assert sorted(a.text for a in Brief.load(brief).amendments) == ["note 0", "note 1", "note 2"]
    assert log.read_text(encoding="utf-8").count("queued") == 3

    reply = channel.inbox()
    assert reply.startswith("The person sent this while you were working (oldest first):\n1. note")
    assert f"already appended to {brief}" in reply
    assert channel.inbox() == "The inbox is empty. Carry on with your work."
    assert log.read_text(encoding="utf-8").count("delivered") == 3
    assert sorted(s for _, s in _states(events, "mail")) == ["delivered"] * 3 + ["queued"] * 3
    assert all(e.payload["amended"] == str(brief) for e in events)


def test_mail_without_a_brief_says_it_was_not_saved() -> None:
    channel = HumanChannel()
    mail = channel.send("remember the CSV")
    assert mail is not None and mail.amended == ""
    assert "NOT saved" in channel.inbox()
    assert not channel.amend("x")


def test_the_mcp_server_and_tool_names() -> None:
    channel = HumanChannel()
    servers = channel.mcp_servers()
    assert list(servers) == ["human"] and channel.mcp_servers()["human"] is servers["human"]
    config = servers["human"]
    assert config["type"] == "sdk" and config["name"] == "human" and config["instance"] is not None
    assert config["alwaysLoad"] is True and config["disableAutoBackground"] is True
    assert channel.ask_tool == "mcp__human__ask" and channel.inbox_tool == "mcp__human__inbox"
