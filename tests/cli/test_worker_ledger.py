"""The supervision ledger: from the coordinator's transcript and its workers', which workers were dispatched and
where each one got to. Entries are shaped as Claude Code 2.1.33x stores them (seen in sessions.db: the Agent
call, the "Async agent launched" result with its ``toolUseResult``, the ``<task-notification>`` user message, the
worker's ``agent_metadata`` and turns under ``subagents/agent-<id>``).

Unit tests for each state and the traps (the harness's own "didn't finish" notice, a launch result flower died
before storing, a synchronous call), and properties over generated runs: every state is read back as it was
made, in dispatch order, whatever noise surrounds it, without touching the input.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from flower_cli.runtime import WorkerRecord, worker_ledger

Entry = dict[str, Any]
SESSION = "c0ffee00-0000-4000-8000-000000000001"


def _assistant(*blocks: dict[str, Any], sidechain: bool = False) -> Entry:
    return {"type": "assistant", "isSidechain": sidechain, "message": {"role": "assistant", "content": list(blocks)}}


def _user(content: Any, *, sidechain: bool = False, result: Any = None) -> Entry:
    entry: Entry = {"type": "user", "isSidechain": sidechain, "message": {"role": "user", "content": content}}
    if result is not None:
        entry["toolUseResult"] = result
    return entry


def _agent_call(call: str, description: str, **extra: Any) -> dict[str, Any]:
    tool_input = {"description": description, "prompt": f"do {description}", **extra}
    return {"type": "tool_use", "id": call, "name": "Agent", "input": tool_input}


def _launched(call: str, agent: str, *, structured: bool = True) -> Entry:
    text = f"Async agent launched successfully. (internal metadata)\nagentId: {agent} (internal ID - do not mention)"
    result = {"isAsync": True, "status": "async_launched", "agentId": agent} if structured else None
    block = {"type": "tool_result", "tool_use_id": call, "content": [{"type": "text", "text": text}]}
    return _user([block], result=result)


def _notice(agent: str | None, call: str | None, status: str, summary: str, result: str = "") -> str:
    ids = (f"<task-id>{agent}</task-id>\n" if agent else "") + (f"<tool-use-id>{call}</tool-use-id>\n" if call else "")
    return (
        f"<system-reminder>\n[SYSTEM NOTIFICATION - NOT USER INPUT]\n<task-notification>\n{ids}"
        f"<status>{status}</status>\n<summary>{summary}</summary>\n<result>{result}</result>\n"
        "</task-notification>\n</system-reminder>"
    )


def _left_running(agent: str, description: str) -> str:
    return _notice(
        agent, None, "stopped", f'Background agent "{description}" didn\'t finish before the previous session ended'
    )


def _worker(call: str, agent: str, description: str, *turns: Entry) -> list[Entry]:
    metadata = {"type": "agent_metadata", "agentType": "general-purpose", "description": description, "toolUseId": call}
    prompt = _user(f"do {description}", sidechain=True)
    return [metadata, prompt, *turns]


def _bash_turn(command: str, tool_id: str) -> list[Entry]:
    call = {"type": "tool_use", "id": tool_id, "name": "Bash", "input": {"command": command}}
    result = {"type": "tool_result", "tool_use_id": tool_id, "content": "ok"}
    return [_assistant(call, sidechain=True), _user([result], sidechain=True)]


def _final(text: str) -> Entry:
    return _assistant({"type": "text", "text": text}, sidechain=True)


def _states(records: Sequence[WorkerRecord]) -> dict[str, str]:
    return {r.description: r.state for r in records}


# --- each state -----------------------------------------------------------------------------------------------


def test_each_state_read_from_the_transcripts() -> None:
    main = [
        _user("build five things"),
        _assistant(*(_agent_call(f"toolu_{n}", name) for n, name in enumerate(["a", "b", "c", "d", "e"]))),
        *(_launched(f"toolu_{n}", f"agent{n}") for n in range(4)),  # e's launch result never stored
        _user(_notice("agent0", "toolu_0", "completed", 'Agent "a" finished', "A-DONE")),
        _user(_left_running("agent2", "c")),
    ]
    workers = {
        "agent0": _worker("toolu_0", "agent0", "a", *_bash_turn("x", "t0"), _final("A-DONE")),
        "agent1": _worker("toolu_1", "agent1", "b", *_bash_turn("y", "t1"), _final("B-DONE")),
        "agent2": _worker("toolu_2", "agent2", "c", *_bash_turn("z", "t2")),
        "agent3": _worker("toolu_3", "agent3", "d"),  # only its prompt: it never answered
    }
    records = worker_ledger(main, workers)
    assert [r.description for r in records] == ["a", "b", "c", "d", "e"]
    assert _states(records) == {
        "a": "reported",
        "b": "finished",  # its answer is stored, the coordinator never had it
        "c": "unfinished",  # the harness's "didn't finish" notice is not a report
        "d": "unstarted",
        "e": "unstarted",
    }
    assert records[1].result == "B-DONE" and records[2].result == ""
    assert [r.agent_id for r in records] == ["agent0", "agent1", "agent2", "agent3", None]
    assert [r.started for r in records] == [True, True, True, False, False]


def test_a_worker_whose_launch_result_was_lost_is_found_by_its_metadata() -> None:
    main = [_assistant(_agent_call("toolu_9", "lost"))]
    workers = {"agentX": _worker("toolu_9", "agentX", "lost", *_bash_turn("x", "t9"))}
    (record,) = worker_ledger(main, workers)
    assert record.agent_id == "agentX" and record.state == "unfinished"


def test_a_launch_result_without_its_structured_part_is_read_from_its_text() -> None:
    main = [_assistant(_agent_call("toolu_1", "a")), _launched("toolu_1", "agent77", structured=False)]
    workers = {"agent77": _worker("toolu_1", "agent77", "a", _final("done"))}
    (record,) = worker_ledger(main, workers)
    assert record.agent_id == "agent77" and record.state == "finished" and record.result == "done"


def test_a_synchronous_call_with_its_result_is_reported_and_an_interrupted_one_is_not() -> None:
    main = [
        _assistant(_agent_call("toolu_1", "sync", run_in_background=False), _agent_call("toolu_2", "cut")),
        _user([{"type": "tool_result", "tool_use_id": "toolu_1", "content": "the answer"}]),
        _user(
            [{"type": "tool_result", "tool_use_id": "toolu_2", "content": "Tool call interrupted", "is_error": True}]
        ),
    ]
    assert _states(worker_ledger(main, {})) == {"sync": "reported", "cut": "unstarted"}


def test_flower_s_own_recovered_notice_reports_and_a_recovery_session_carries_the_worker_on() -> None:
    main = [
        _assistant(_agent_call("toolu_1", "a"), _agent_call("toolu_2", "b"), _agent_call("toolu_3", "c")),
        *(_launched(f"toolu_{n}", f"agent{n}") for n in (1, 2, 3)),
        _user(_notice("agent1", "toolu_1", "completed", 'Agent "a" finished (recovered by flower: resumed)', "A")),
    ]
    workers = {
        f"agent{n}": _worker(f"toolu_{n}", f"agent{n}", "abc"[n - 1], *_bash_turn("x", f"t{n}")) for n in (1, 2, 3)
    }
    recoveries = {
        "toolu_2": [_user("do b"), *_bash_turn("x", "t2"), _final("B-RECOVERED")],
        "toolu_3": [_user("do c")],  # a recovery cut before its first answer: continued, never restarted
    }
    records = worker_ledger(main, workers, recoveries)
    assert _states(records) == {"a": "reported", "b": "finished", "c": "unfinished"}
    assert records[1].result == "B-RECOVERED" and records[1].recovery and not records[0].recovery


def test_a_synthetic_error_is_not_a_final_answer_nor_a_turn() -> None:
    error = {
        "type": "assistant",
        "isApiErrorMessage": True,
        "message": {"model": "<synthetic>", "content": [{"type": "text", "text": "API Error: Connection refused"}]},
    }
    main = [_assistant(_agent_call("toolu_1", "a")), _launched("toolu_1", "agent1")]
    (record,) = worker_ledger(main, {"agent1": _worker("toolu_1", "agent1", "a", error)})
    assert record.state == "unstarted"


def test_the_worker_s_worktree_is_where_it_last_worked() -> None:
    main = [_assistant(_agent_call("toolu_1", "a", isolation="worktree")), _launched("toolu_1", "agent1")]
    turn = _bash_turn("x", "t1")
    for entry in turn:
        entry["cwd"] = "/repo/.claude/worktrees/agent-1"
    (record,) = worker_ledger(main, {"agent1": _worker("toolu_1", "agent1", "a", *turn)})
    assert record.isolation == "worktree" and record.cwd == "/repo/.claude/worktrees/agent-1"


# --- properties over generated runs ---------------------------------------------------------------------------

STATES = ("reported", "finished", "unfinished", "unstarted")


@dataclass
class Plan:
    """A generated worker: the state it is made in and the ways its transcripts may be written."""

    state: str
    named: bool  # the launch result (with its agent id) was stored
    structured: bool  # that result carries its toolUseResult
    left_running_notice: bool  # the harness's own notice on a resume
    recovery: str | None  # None, or the state of flower's recovery session ("finished" / "unfinished")
    noise: list[Entry] = field(default_factory=list)


_noise = st.sampled_from(
    [
        {"type": "attachment", "attachment": {"type": "date"}},
        {"type": "queue-operation", "operation": "enqueue", "content": "<task-notification><task-id>zzz</task-id>"},
        {"type": "last-prompt", "lastPrompt": "x"},
        _user(_notice("someone-else", "toolu_other", "completed", "another agent", "X")),
        _assistant({"type": "text", "text": "thinking aloud"}),
    ]
)


@st.composite
def _plans(draw: st.DrawFn) -> list[Plan]:
    plans = []
    for _ in range(draw(st.integers(0, 7))):
        state = draw(st.sampled_from(STATES))
        recovery = draw(st.sampled_from([None, "finished", "unfinished"])) if state != "reported" else None
        plans.append(
            Plan(
                state=state,
                named=draw(st.booleans()) or state == "reported",
                structured=draw(st.booleans()),
                left_running_notice=draw(st.booleans()) and state != "reported",
                recovery=recovery,
                noise=draw(st.lists(_noise, max_size=2)),
            )
        )
    return plans


def _build(
    plans: list[Plan], shuffle: st.DataObject
) -> tuple[list[Entry], dict[str, list[Entry]], dict[str, list[Entry]]]:
    main: list[Entry] = [_user("the task")]
    calls = [_agent_call(f"toolu_{n}", f"w{n}") for n in range(len(plans))]
    # The dispatches, in order, one or several to an assistant message.
    cut = sorted(shuffle.draw(st.sets(st.integers(1, max(1, len(calls) - 1)), max_size=3))) if calls else []
    for chunk in _chunks(calls, cut):
        main.append(_assistant(*chunk))
    workers: dict[str, list[Entry]] = {}
    recoveries: dict[str, list[Entry]] = {}
    for n, plan in enumerate(plans):
        call, agent, name = f"toolu_{n}", f"agent{n:03d}", f"w{n}"
        if plan.named:
            main.append(_launched(call, agent, structured=plan.structured))
        main.extend(plan.noise)
        turns = {
            "reported": [*_bash_turn("x", f"t{n}"), _final(f"{name}-DONE")],
            "finished": [*_bash_turn("x", f"t{n}"), _final(f"{name}-DONE")],
            "unfinished": _bash_turn("x", f"t{n}")[:1],
            "unstarted": [],
        }[plan.state]
        if plan.state != "unstarted" or shuffle.draw(st.booleans()):
            workers[agent] = _worker(call, agent, name, *turns)
        if plan.state == "reported":
            main.append(_user(_notice(agent, shuffle.draw(st.sampled_from([call, None])), "completed", name, "ok")))
        if plan.left_running_notice:
            main.append(_user(_left_running(agent, name)))
        if plan.recovery == "finished":
            recoveries[call] = [_user("do it"), _final(f"{name}-RECOVERED")]
        elif plan.recovery == "unfinished":
            recoveries[call] = [_user("do it"), *_bash_turn("x", f"r{n}")[:1]]
    return main, workers, recoveries


def _chunks(items: list[Any], cut: list[int]) -> list[list[Any]]:
    bounds = [0, *[c for c in cut if 0 < c < len(items)], len(items)]
    return [items[a:b] for a, b in zip(bounds, bounds[1:], strict=False) if items[a:b]]


def _expected(plan: Plan) -> str:
    if plan.state == "reported":
        return "reported"
    if plan.recovery is not None:
        return plan.recovery
    if not plan.named and plan.state == "unstarted":
        return "unstarted"
    return plan.state


@settings(max_examples=300, deadline=None)
@given(plans=_plans(), data=st.data())
def test_every_state_is_read_back_in_dispatch_order_and_the_input_is_untouched(
    plans: list[Plan], data: st.DataObject
) -> None:
    main, workers, recoveries = _build(plans, data)
    before = copy.deepcopy((main, workers, recoveries))
    records = worker_ledger(main, workers, recoveries)
    assert (main, workers, recoveries) == before, "the ledger changed its input"
    assert [r.call_id for r in records] == [f"toolu_{n}" for n in range(len(plans))]
    assert [r.state for r in records] == [_expected(p) for p in plans]
    for n, (record, plan) in enumerate(zip(records, plans, strict=True)):
        if record.state == "finished":
            assert record.result == (f"w{n}-RECOVERED" if plan.recovery else f"w{n}-DONE")
        else:
            assert record.result == ""
        assert record.recovery == (plan.recovery is not None)
    assert worker_ledger(main, workers, recoveries) == records, "same input, same ledger"


@settings(max_examples=150, deadline=None)
@given(plans=_plans(), data=st.data())
def test_entries_of_other_kinds_and_other_agents_change_nothing(plans: list[Plan], data: st.DataObject) -> None:
    main, workers, recoveries = _build(plans, data)
    records = worker_ledger(main, workers, recoveries)
    noisy = list(main)
    for noise in data.draw(st.lists(_noise, max_size=6)):
        noisy.insert(data.draw(st.integers(1, len(noisy))), noise)
    stranger = {"agentZZZ": _worker("toolu_stranger", "agentZZZ", "stranger", _final("x"))}
    assert worker_ledger(noisy, {**workers, **stranger}, recoveries) == records
