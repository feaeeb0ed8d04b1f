"""The control surface without a model: a `RunPublisher` writing into a real SQLite store from its own thread,
`Control` reading and telling from another store object (as another process would)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flower_cli import Control, ControlError, RunPublisher
from flower_cli.control import HeadFold
from flower_stores import InboxMessage, SqliteSessionStore


@pytest.fixture
def stores(tmp_path: Path) -> Iterator[tuple[SqliteSessionStore, SqliteSessionStore]]:
    with SqliteSessionStore(tmp_path / "s.db") as run_side, SqliteSessionStore(tmp_path / "s.db") as reader:
        yield run_side, reader


def _until(check: Any, timeout_s: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.05)


def test_the_head_follows_steps_context_cost_and_questions() -> None:
    fold = HeadFold(meta={"command": "go"})
    fold.fold({"kind": "step", "text": "clarify", "payload": {"index": 1, "total": 3}})
    fold.fold({"kind": "system", "text": "init", "payload": {"session_id": "s-1"}})
    fold.fold({"kind": "text", "text": "hi", "payload": {"context": 12_000}})
    fold.fold({"kind": "text", "text": "w", "subagent": True, "payload": {"context": 99_000}})  # a worker's
    fold.fold({"kind": "turn", "payload": {"total_cost_usd": 0.25, "session_id": "s-1"}})
    fold.fold(
        {
            "kind": "ask",
            "text": "Which DB?",
            "payload": {"kind": "question", "state": "asked", "id": "q1", "options": ["a"]},
        }
    )
    head = fold.head()
    assert head["state"] == "waiting" and head["question"]["id"] == "q1"
    assert (head["step"], head["step_index"], head["session"], head["context"]) == ("clarify", 1, "s-1", 12_000)
    fold.fold({"kind": "ask", "payload": {"kind": "question", "state": "answered", "id": "q1"}})
    fold.fold({"kind": "result", "payload": {"cost_usd": 0.3, "session_id": "s-1"}})
    head = fold.head()
    assert head["state"] == "running" and head["question"] is None and head["cost_usd"] == 0.3
    fold.fold({"kind": "done", "ok": True})
    assert fold.head()["state"] == "done"


def test_status_answer_mail_and_stop_through_the_store(stores: tuple[SqliteSessionStore, SqliteSessionStore]) -> None:
    run_side, reader = stores
    taken: list[InboxMessage] = []

    def handle(message: InboxMessage) -> tuple[bool, str]:
        taken.append(message)
        return True, f"took the {message.kind}"

    meta = {"command": "go", "workspace": "/ws", "accepts": ["answer", "mail", "stop"]}
    with RunPublisher(run_side, "run-1", meta=meta, handle=handle, inbox_s=0.1) as publisher:
        control = Control(reader)
        assert [r.run_id for r in control.runs()] == ["run-1"]
        publisher.publish({"kind": "step", "text": "clarify", "payload": {"index": 1, "total": 3}})
        publisher.publish({"kind": "ask", "text": "Q?", "payload": {"kind": "question", "state": "asked", "id": "q1"}})
        info = _until(lambda: (r := control.pick()).state == "waiting" and r)
        assert info and info.question == "Q?" and info.step == "clarify" and info.question_id == "q1"

        answer = control.answer(None, "SQLite", sender="tester")
        ack = control.wait_taken(answer)
        assert ack is not None and ack["ok"] and ack["sender"] == "tester"
        assert (taken[-1].kind, taken[-1].text, taken[-1].question) == ("answer", "SQLite", "q1")
        control.wait_taken(control.mail("run-1", "add tests too"))
        assert taken[-1].kind == "mail"
        stop = control.stop("run")  # a unique prefix of the id is enough
        assert control.wait_taken(stop) is not None
        publisher.finish(ok=False)
    info = control.run("run-1")
    assert info.state == "stopped" and info.stopped_by and not info.live
    kinds = [e.event["kind"] for e in control.events("run-1")]
    assert kinds[:2] == ["step", "ask"] and kinds.count("control") == 3 and kinds[-1] == "done"
    with pytest.raises(ControlError, match="is stopped"):
        control.mail("run-1", "too late")
    with pytest.raises(ControlError, match="no run is running"):
        control.pick()


def test_a_run_nobody_drives_any_more_is_dead_and_ambiguity_is_named(
    stores: tuple[SqliteSessionStore, SqliteSessionStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    run_side, reader = stores
    run_side.append_events("a-1", [{"kind": "step"}], head={"state": "running", "accepts": ["mail"]})
    run_side.append_events("a-2", [{"kind": "step"}], head={"state": "running", "accepts": ["answer", "mail"]})
    control = Control(reader)
    with pytest.raises(ControlError, match="2 runs are running .*say which"):
        control.pick()
    with pytest.raises(ControlError, match="starts 2 run ids"):
        control.run("a-")
    with pytest.raises(ControlError, match="takes no answer"):
        control.answer("a-1", "x", question_id="q1")
    with pytest.raises(ControlError, match="waits on no question"):
        control.answer("a-2", "x")
    import flower_cli.control._info as info_module

    monkeypatch.setattr(info_module, "STALE_S", -1.0)  # as if their last word were long ago, with no lease
    assert {r.state for r in control.runs()} == {"dead"}


def test_fleet_runs_are_read_from_the_fleets_status(monkeypatch: pytest.MonkeyPatch) -> None:
    from flower_cli.control import FleetRuns, fleet_configured

    lines = [
        {
            "run_id": "go-1",
            "status": "running",
            "step": "clarify",
            "question": "EN or FR?",
            "workflow": "go",
            "cost_usd": 0.5,
        },
        {"run_id": "w-2", "status": "completed", "step": "", "question": "", "workflow": "flows", "cost_usd": 1.0},
        {"run_id": "w-3", "status": "cancelled", "step": "b", "question": "", "workflow": "flows", "cost_usd": 0.0},
    ]
    monkeypatch.setattr(
        FleetRuns, "_fleet", lambda self, *args: "\n".join(json.dumps(x) for x in lines) + "\nnot json\n"
    )
    runs = FleetRuns().runs()
    assert [(r.run_id, r.state, r.fleet) for r in runs] == [
        ("go-1", "waiting", True),
        ("w-2", "done", True),
        ("w-3", "stopped", True),
    ]
    assert runs[0].question == "EN or FR?" and runs[0].accepts == ("answer", "stop") and runs[1].ok is True
    assert fleet_configured({"FLOWER_TEMPORAL": "127.0.0.1:7233"}) and not fleet_configured({})
