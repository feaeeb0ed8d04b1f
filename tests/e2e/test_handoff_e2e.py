"""Handoff instead of compaction, with the real binary: usage numbers from the scripted server push the main
thread's context over the handoff point; the same session writes the handoff, a fresh session takes over
with it; an overflow error degrades the handoff; the ninth generation stops the step."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from flower_cli import AgentSpec, Event, HandoffPolicy, Runtime, resolve_window
from flower_cli.runtime._handoff import Window
from harness import (
    After,
    Hang,
    ScriptedServer,
    Step,
    Text,
    Turn,
    Usage,
    bash,
    dispatch,
    invalid_request,
    keyed,
    when,
    when_main,
    when_notified,
    when_prompt,
    when_subagent,
)

pytestmark = pytest.mark.e2e

WINDOW = 200_000  # the policy hands off at 150k (automatic headroom: 50k) and warns at 130k
TAKING_OVER = "You are taking over step"
WRITING = when(lambda r: "Your context is nearly full" in r.last_user_text, "handoff prompt")
HANDOFF_TEXT = """## Doing now
Counting the widgets in widgets.txt (HANDOFF-DOING).

## Decided, and why
Count with wc -l: the file has one widget per line.

## Dead ends
(none yet)

## Next
Report the count (HANDOFF-NEXT).

## Scene
widgets.txt in the workspace.
"""
TOO_LONG = "prompt is too long: 210000 tokens > 200000 maximum"


def rows(run_dir: Path) -> list[dict[str, Any]]:
    return json.loads((run_dir / "manifest.json").read_text())  # type: ignore[no-any-return]


def spec() -> AgentSpec:
    return AgentSpec("counter", "You count things.", allowed_tools=["Bash", "Read"])


async def test_usage_over_the_threshold_hands_off_to_a_fresh_session(
    claude_env: ScriptedServer, workspace: Path, tmp_path: Path
) -> None:
    first = when_main() & when_prompt("COUNT-TASK") & ~WRITING
    claude_env.script(
        # Round 1 reads 140k of context (past the warning), round 2 160k (past the handoff point) and runs a tool:
        # the step stops when its result is in, before the model is asked again.
        *keyed(
            first, bash("echo one", text="Looking.", usage=Usage(input_tokens=120_000, cache_read_input_tokens=20_000))
        ),
        *keyed(
            first,
            bash(
                "echo two",
                text="Counting.",
                usage=Usage(input_tokens=10_000, cache_read_input_tokens=140_000, cache_creation_input_tokens=10_000),
            ),
        ),
        Step(Text(HANDOFF_TEXT), WRITING),
        Step(Text("SUCCESSOR-DONE: 2 widgets"), when_prompt(TAKING_OVER)),
    )
    events: list[Event] = []
    sessions: list[str] = []
    with Runtime(workspace, tmp_path / "runs", workbench=True, handoff=HandoffPolicy(window=WINDOW)) as rt:
        result = await rt.run(
            spec(),
            "COUNT-TASK: count the widgets",
            step_name="count",
            on_event=events.append,
            on_session=sessions.append,
        )
        notes = rt.workbench.notes if rt.workbench else None

    assert result.ok, (result.error, result.errors)
    assert result.text == "SUCCESSOR-DONE: 2 widgets"
    assert len(result.retired) == 1 and result.session_id and result.session_id not in result.retired
    assert sessions == [result.retired[0], result.session_id], "lineage follows the successor"

    requests = claude_env.message_requests
    writing = [r for r in requests if WRITING(r)]
    assert len(writing) == 1 and "COUNT-TASK" in writing[0].first_user_text, "the same session wrote the handoff"
    assert "160,000 of a 200,000-token window" in writing[0].last_user_text
    successor = [r for r in requests if TAKING_OVER in r.first_user_text]
    assert successor, "a fresh session took over"
    first_message = successor[0].first_user_text
    assert "HANDOFF-DOING" in first_message and "HANDOFF-NEXT" in first_message and "COUNT-TASK" not in first_message
    # The old session stopped at the tool result that reached the handoff point, before asking the model again
    # (the harness sends that request at once: the stop hook ended the turn instead).
    assert not [r for r in requests if not WRITING(r) and any(b.get("content") == "two" for b in r.tool_results())]

    assert notes is not None
    saved = notes / "handoff-count.md"
    assert saved.is_file() and "HANDOFF-DOING" in saved.read_text() and "## Next" in saved.read_text()
    assert str(saved) in first_message

    phases = [e.payload.get("phase") for e in events if e.kind == "handoff"]
    assert phases == ["near", "writing", "done"]
    done = next(e for e in events if e.kind == "handoff" and e.payload.get("phase") == "done")
    assert (
        done.payload["degraded"] is False
        and done.payload["retired"] == result.retired[0]
        and done.payload["path"] == str(saved)
    )

    row = rows(tmp_path / "runs")[-1]
    assert row["retired"] == result.retired and row["session_id"] == result.session_id and row["ok"] is True


async def test_a_coordinator_past_the_threshold_waits_for_its_live_worker_then_hands_off(
    claude_env: ScriptedServer, workspace: Path, tmp_path: Path
) -> None:
    # The dispatching turn ends at 160k (past the handoff point, below the no-waiting point of 175k) with a
    # background worker live: a handoff now would end the worker with the old session's process, so the step
    # waits. The worker answers only after that turn has ended; its notification wakes the main thread, which
    # runs one command: that tool result, with nobody live, is where the step hands off.
    main = when_main() & when_prompt("SURVEY-TASK") & ~WRITING
    events: list[Event] = []

    def turn_ended(_server: ScriptedServer) -> bool:  # the Runtime has seen the dispatching turn end
        return any(e.kind == "turn" for e in events)

    worker = dispatch(
        "count widgets", After(turn_ended, Text("WORKER-DONE: 7 widgets")), prompt="COUNT-PIECE: count the widgets"
    )
    big = Usage(input_tokens=10_000, cache_read_input_tokens=150_000)
    claude_env.script(
        *keyed(main & ~when_notified(), Turn([worker], usage=big), Text("Waiting for the worker.", usage=big)),
        Step(bash("echo checked", text="Checking.", usage=big), main & when_notified("WORKER-DONE")),
        Step(Text(HANDOFF_TEXT), WRITING),
        Step(Text("SUCCESSOR-DONE: 7 widgets"), when_prompt(TAKING_OVER)),
    )
    survey = AgentSpec("surveyor", "You survey things.", allowed_tools=["Agent", "Bash"])
    with Runtime(workspace, tmp_path / "runs", handoff=HandoffPolicy(window=WINDOW)) as rt:
        result = await rt.run(survey, "SURVEY-TASK: count the widgets", step_name="survey", on_event=events.append)

    assert result.ok, (result.error, result.errors)
    assert result.text == "SUCCESSOR-DONE: 7 widgets"
    assert len(result.retired) == 1 and result.session_id not in result.retired
    requests = claude_env.message_requests
    writing = [r for r in requests if WRITING(r)]
    assert len(writing) == 1, "one handoff, after the worker: none while it was live"
    worker_requests = [i for i, r in enumerate(requests) if when_subagent()(r)]
    assert worker_requests and max(worker_requests) < requests.index(writing[0]), (
        "the worker finished before the handoff"
    )
    # The old session wrote its handoff with the whole turn in view: the worker's notification and the
    # command's result had reached the store the resumed session is loaded from.
    assert "WORKER-DONE" in writing[0].text and "echo checked" in json.dumps(writing[0].tool_uses())
    assert "checked" in json.dumps(writing[0].tool_results())
    assert not [
        r for r in requests if not WRITING(r) and any(b.get("content") == "checked" for b in r.tool_results())
    ], "no request past the boundary"
    assert not any("stopped" in e for e in result.errors), result.errors
    first_turn = next(e for e in events if e.kind == "turn")
    assert first_turn.payload["live_workers"], "the turn past the handoff point ended with the worker live"
    assert [e.payload.get("phase") for e in events if e.kind == "handoff"] == ["near", "writing", "done"]
    assert rows(tmp_path / "runs")[-1]["retired"] == result.retired


async def test_past_the_no_waiting_point_the_handoff_stops_a_live_worker_and_says_so(
    claude_env: ScriptedServer, workspace: Path, tmp_path: Path
) -> None:
    # The dispatching turn ends at 180k, past the no-waiting point (175k of a 200k window): the next turn could
    # overflow, so the step hands off now, with the worker still running (its request is never answered).
    main = when_main() & when_prompt("SURVEY-TASK") & ~WRITING
    worker = dispatch("count widgets", Hang(), prompt="COUNT-PIECE: count the widgets")
    full = Usage(input_tokens=10_000, cache_read_input_tokens=170_000)
    claude_env.script(
        *keyed(main & ~when_notified(), Turn([worker], usage=full), Text("Waiting for the worker.", usage=full)),
        Step(Text(HANDOFF_TEXT), WRITING),
        Step(Text("SUCCESSOR-DONE: dispatched again"), when_prompt(TAKING_OVER)),
    )
    events: list[Event] = []
    survey = AgentSpec("surveyor", "You survey things.", allowed_tools=["Agent", "Bash"])
    with Runtime(workspace, tmp_path / "runs", handoff=HandoffPolicy(window=WINDOW)) as rt:
        result = await rt.run(survey, "SURVEY-TASK: count the widgets", step_name="survey", on_event=events.append)

    assert result.ok and result.text == "SUCCESSOR-DONE: dispatched again", (result.error, result.errors)
    assert len(result.retired) == 1
    requests = claude_env.message_requests
    [writing] = [r for r in requests if WRITING(r)]
    [worker_request] = [r for r in requests if when_subagent()(r)]
    assert worker_request.status is None, "the worker never got an answer: it was stopped, not waited for"
    assert 'stopped your background workers that were still running: "count widgets"' in writing.last_user_text
    successor = next(r for r in requests if TAKING_OVER in r.first_user_text)
    assert 'stopped background workers before they finished: "count widgets"' in successor.first_user_text
    done = next(e for e in events if e.kind == "handoff" and e.payload.get("phase") == "done")
    assert (
        done.payload["stopped_workers"] == ["count widgets"]
        and "stopped unfinished worker 'count widgets'" in done.text
    )
    assert [w["status"] for w in result.workers] == ["stopped"]


async def test_a_session_resumed_past_the_threshold_hands_off_before_the_new_words(
    claude_env: ScriptedServer, workspace: Path, tmp_path: Path
) -> None:
    first = when_main() & when_prompt("ROUND-1") & ~WRITING
    claude_env.script(
        # Round 1 ends its step at 160k: nothing to hand over then (the step is done).
        *keyed(first, Text("Round one done.", usage=Usage(input_tokens=160_000))),
        Step(Text(HANDOFF_TEXT), WRITING),
        Step(Text("ROUND-2-DONE"), when_prompt(TAKING_OVER)),
    )
    with Runtime(workspace, tmp_path / "runs", handoff=HandoffPolicy(window=WINDOW)) as rt:
        one = await rt.run(spec(), "ROUND-1: start", step_name="work")
        assert one.ok and not one.retired and one.context == 160_000
        events: list[Event] = []
        two = await rt.run(
            spec(), "ROUND-2: the judge's gaps", step_name="work#round2", resume=one.session_id, on_event=events.append
        )

    assert two.ok and two.text == "ROUND-2-DONE", (two.error, two.errors)
    assert two.retired == [one.session_id] and two.session_id != one.session_id
    writing = next(r for r in claude_env.message_requests if WRITING(r))
    assert "ROUND-1" in writing.first_user_text and "ROUND-2" not in writing.text, (
        "the old session wrote it, before the new words"
    )
    successor = next(r for r in claude_env.message_requests if TAKING_OVER in r.first_user_text)
    assert "HANDOFF-NEXT" in successor.first_user_text and "ROUND-2: the judge's gaps" in successor.first_user_text
    assert [e.payload.get("phase") for e in events if e.kind == "handoff"] == ["writing", "done"]


async def test_a_prompt_too_long_error_forces_a_degraded_handoff(
    claude_env: ScriptedServer, workspace: Path, tmp_path: Path
) -> None:
    big = when_main() & when_prompt("BIG-TASK")
    claude_env.script(
        # 120k is below the warning: the next request overflows a window smaller than the policy thinks
        *keyed(big, bash("echo logs", usage=Usage(input_tokens=120_000)), invalid_request(TOO_LONG)),
        Step(Text("RECOVERED"), when_prompt(TAKING_OVER)),
    )
    events: list[Event] = []
    with Runtime(workspace, tmp_path / "runs", handoff=HandoffPolicy(window=WINDOW)) as rt:
        result = await rt.run(spec(), "BIG-TASK: summarise every log", step_name="logs/sum", on_event=events.append)

    assert result.ok and result.text == "RECOVERED", (result.error, result.errors)
    assert len(result.retired) == 1
    assert any("prompt is too long" in e.lower() for e in result.errors), result.errors
    assert any(e.startswith("handoff degraded") for e in result.errors)
    successor = next(r for r in claude_env.message_requests if TAKING_OVER in r.first_user_text)
    assert "[degraded: no handoff was written]" in successor.first_user_text
    assert "BIG-TASK: summarise every log" in successor.first_user_text, "the scene carries the step's original prompt"
    assert not any(WRITING(r) for r in claude_env.message_requests), "an overflowed session cannot write a handoff"

    # no workbench: the document is kept in the run dir
    saved = tmp_path / "runs" / "handoffs" / "handoff-logssum.md"
    assert saved.is_file() and "[degraded" in saved.read_text()
    # the overflow calibrates the window of later runs against this endpoint: the harness reports no token
    # counts ("Prompt is too long"), so the context last seen before it is what is known to overflow
    assert resolve_window() == Window(120_000, "calibrated")
    assert [e.payload.get("phase") for e in events if e.kind == "handoff"] == ["done"]


async def test_the_ninth_generation_stops_the_step(claude_env: ScriptedServer, workspace: Path, tmp_path: Path) -> None:
    # Every session overflows at once (a role whose start does not fit the window): eight handoffs, then stop.
    claude_env.script(*keyed(when_main(), *[invalid_request(TOO_LONG) for _ in range(9)]))
    events: list[Event] = []
    with Runtime(workspace, tmp_path / "runs", handoff=HandoffPolicy(window=WINDOW)) as rt:
        result = await rt.run(spec(), "HUGE-TASK", step_name="huge", on_event=events.append)

    assert not result.ok
    assert len(result.retired) == 8 and len(set(result.retired)) == 8
    assert (
        result.error
        and "handed off 8 times" in result.error
        and "--no-handoff" in result.error
        and "\n" not in result.error
    )
    assert len(claude_env.message_requests) == 9
    phases = [e.payload.get("phase") for e in events if e.kind == "handoff"]
    assert phases == ["done"] * 8 + ["stopped"]
    row = rows(tmp_path / "runs")[-1]
    assert row["ok"] is False and row["retired"] == result.retired and row["error"] == result.error
    archived = list((tmp_path / "runs" / "handoffs" / "archive" / "handoff").glob("huge-*.md"))
    assert len(archived) == 7, "each generation's document archives the previous one"


def test_flower_once_hands_off_with_the_window_from_flower_window(claude_env: ScriptedServer, workspace: Path) -> None:
    first = when_main() & when_prompt("CLI-TASK") & ~WRITING
    claude_env.script(
        # FLOWER_WINDOW=100k: hand off at 50k, warn from 30k
        *keyed(first, bash("echo one", text="Looking.", usage=Usage(input_tokens=60_000))),
        Step(Text(HANDOFF_TEXT), WRITING),
        Step(Text("CLI-SUCCESSOR-DONE"), when_prompt(TAKING_OVER)),
    )
    done = subprocess.run(
        [sys.executable, "-m", "flower_cli", "-W", "--json", "once", "-t", "Bash", "CLI-TASK: count"],
        cwd=workspace,
        env={**os.environ, "FLOWER_NO_UPDATE": "1", "FLOWER_WINDOW": "100k"},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    handoffs = [e["payload"] for e in events if e["kind"] == "handoff"]
    assert [h["phase"] for h in handoffs] == ["near", "writing", "done"]
    assert handoffs[-1]["window"] == 100_000 and handoffs[-1]["at"] == 50_000 and handoffs[-1]["degraded"] is False
    assert handoffs[-1]["sections"]["next_step"].startswith("Report the count")
    saved = workspace / "runs" / "workbench" / "notes" / "handoff-ad-hoc.md"
    assert handoffs[-1]["path"] == str(saved) and saved.is_file()
    final = events[-1]
    assert final["kind"] == "done" and final["ok"] is True and final["text"] == "CLI-SUCCESSOR-DONE"
    [row] = rows(workspace / "runs")
    assert row["retired"] == [handoffs[-1]["retired"]] and row["session_id"] == final["session_id"] != row["retired"][0]
    # `flower analyze` on that run dir: one handoff, the retired session linked to its successor
    seen = subprocess.run(
        [sys.executable, "-m", "flower_cli", "--json", "analyze"],
        cwd=workspace,
        env={**os.environ, "FLOWER_NO_UPDATE": "1"},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert seen.returncode == 0, seen.stderr
    report = json.loads(seen.stdout)
    assert report["totals"]["handoffs"] == 1
    [step] = report["steps"]
    assert step["session_ids"] == [row["retired"][0], row["session_id"]]
    retired = next(s for s in report["sessions"] if s["session_id"] == row["retired"][0])
    assert retired["handoff_to"] == row["session_id"]
