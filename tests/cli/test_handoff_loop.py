"""The per-step handoff loop the Runtime drives: where a step may stop for a handoff, the warning, the written
or degraded document, the generation brake; and what handoff on/off does to the harness's compaction."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from flower_cli import AgentSpec, CompactPolicy, Event, Handoff, HandoffPolicy, Runtime, resolve_window
from flower_cli.runtime._handoff import OVERFLOW_WHY, Decision, HandoffLoop, QuietRound, overflow_limit
from flower_cli.view import Renderer

COMPLETE = "## Doing now\nCounting.\n\n## Next\nReport the count.\n\n## Scene\nwidgets.txt\n"


@pytest.fixture(autouse=True)
def credential(isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0000000000000000")


def loop(tmp_path: Path, **policy: int) -> tuple[HandoffLoop, list[Event]]:
    seen: list[Event] = []
    made = HandoffLoop(
        HandoffPolicy(window=200_000, **policy),
        step="work",
        original_prompt="TASK",
        save_dir=tmp_path / "notes",
        emit=seen.append,
    )
    return made, seen


def assistant(context: int, *calls: str) -> list[Event]:
    events = [Event("text", "thinking aloud", payload={"context": context})]
    return events + [Event("tool_call", "echo", tool="Bash", payload={"id": c, "context": context}) for c in calls]


def results(*calls: str) -> list[Event]:
    return [Event("tool_result", "ok", payload={"tool_use_id": c}) for c in calls]


def test_hands_off_only_when_every_main_thread_call_is_answered(tmp_path: Path) -> None:
    hl, seen = loop(tmp_path)
    assert not hl.observe(assistant(160_000, "a", "b"), live_workers=False)
    assert not hl.observe(results("a"), live_workers=False), "b is still running"
    assert hl.observe(results("b"), live_workers=False)
    assert [e.payload["phase"] for e in seen] == ["near"]


def test_subagent_context_does_not_count_and_the_warning_comes_once(tmp_path: Path) -> None:
    hl, seen = loop(tmp_path)
    worker = [Event("text", "w", payload={"context": 190_000}, subagent=True)]
    assert not hl.observe(worker, live_workers=True) and hl.context == 0
    hl.observe(assistant(131_000), live_workers=False)
    hl.observe(assistant(140_000), live_workers=False)
    assert [e.payload["phase"] for e in seen] == ["near"] and "131.0K/200.0K" in seen[0].text


def test_a_turn_that_ends_the_step_is_not_handed_off(tmp_path: Path) -> None:
    hl, _ = loop(tmp_path)
    hl.observe(assistant(170_000), live_workers=False)
    assert not hl.observe([Event("turn", "success")], live_workers=False)


def test_live_workers_delay_the_handoff_until_the_middle_of_the_headroom(tmp_path: Path) -> None:
    hl, _ = loop(tmp_path)  # at 150k, window 200k: waits for workers up to 175k
    assert hl.hard_at == 175_000
    hl.observe(assistant(160_000), live_workers=True)
    assert not hl.observe([Event("turn", "success")], live_workers=True)
    hl.observe(assistant(176_000, "c"), live_workers=True)
    assert hl.observe(results("c"), live_workers=True)


async def test_the_stop_hook_ends_the_turn_at_the_boundary_and_that_turn_is_handed_off(tmp_path: Path) -> None:
    hl, _ = loop(tmp_path)
    [stop] = hl.stop_hook(lambda: False, within=0.05).hooks
    hl.observe(assistant(100_000, "low"), live_workers=False)
    assert await stop({"tool_name": "Bash"}, "low", None) == {}, "below the handoff point the turn goes on"
    hl.observe(results("low"), live_workers=False)
    hl.observe(assistant(160_000, "a", "b"), live_workers=False)
    assert await stop({"tool_name": "Bash"}, "a", None) == {}, "b is still open"
    assert await stop({"tool_name": "Bash", "agent_id": "w1"}, "b", None) == {}, "a worker's call"
    assert await stop({"tool_name": "Bash"}, "never-seen", None) == {}, "a call it cannot place"
    hl.observe(results("a"), live_workers=False)
    stopped = await stop({"tool_name": "Bash"}, "b", None)
    assert stopped.get("continue_") is False and "handing off" in str(stopped.get("stopReason"))
    # The harness ends the turn there: whether the result or the turn's end is seen first, it hands off.
    assert hl.observe([Event("turn", "success")], live_workers=False)


async def test_the_stop_hook_waits_for_live_workers_and_never_stops_a_dispatch(tmp_path: Path) -> None:
    hl, _ = loop(tmp_path)
    live = True
    [stop] = hl.stop_hook(lambda: live, within=0.05).hooks
    hl.observe(assistant(160_000, "a"), live_workers=True)
    assert await stop({"tool_name": "Bash"}, "a", None) == {}, "a worker is live and the context is below 175k"
    hl.observe(results("a"), live_workers=True)
    hl.observe(assistant(165_000, "d"), live_workers=False)
    live = False
    assert await stop({"tool_name": "Agent"}, "d", None) == {}, "the call just started a worker"
    assert not hl.observe([Event("turn", "success")], live_workers=False), "no stop: the turn's end is the step's"


def test_the_written_handoff_is_saved_and_the_old_session_retired(tmp_path: Path) -> None:
    hl, seen = loop(tmp_path)
    hl.observe(assistant(160_000), live_workers=False)
    decision = hl.after(due=True)
    assert decision.action == "write"

    doc, why = hl.document(decision, QuietRound(COMPLETE))
    assert why == "" and doc.complete and "160,000 of a 200,000-token window" in decision.prompt
    prompt = hl.take_over(doc, "s1")
    assert hl.retired == ["s1"] and hl.generations == 1 and hl.context == 0
    assert (tmp_path / "notes" / "handoff-work.md").is_file() and str(tmp_path / "notes" / "handoff-work.md") in prompt
    assert "Report the count." in prompt
    assert [e.payload["phase"] for e in seen] == ["near", "writing", "done"]
    # a new generation warns again
    hl.observe(assistant(135_000), live_workers=False)
    assert [e.payload["phase"] for e in seen][-1] == "near"


@pytest.mark.parametrize(
    ("outcome", "why"),
    [
        (QuietRound("## Doing now\nCounting.\n"), "it had no 'Next' section"),
        (QuietRound("", "API Error: 500 boom"), "the writing round failed: API Error: 500 boom"),
        (QuietRound("", "Prompt is too long"), OVERFLOW_WHY),
        (RuntimeError("the SDK broke"), "the writing round failed: RuntimeError: the SDK broke"),
    ],
)
def test_a_handoff_that_cannot_be_written_is_built_from_the_original_prompt(
    tmp_path: Path, outcome: object, why: str
) -> None:
    hl, _ = loop(tmp_path)
    written = QuietRound.failed(outcome) if isinstance(outcome, Exception) else outcome
    assert isinstance(written, QuietRound)

    doc, reason = hl.document(hl.after(due=True), written)
    assert reason == why and doc.degraded and "TASK" in doc.scene


def test_the_brake_after_max_generations(tmp_path: Path) -> None:
    hl, seen = loop(tmp_path, max_generations=2)
    for n in (1, 2):
        assert not hl.exhausted
        hl.take_over(Handoff(doing="d", next_step="n"), f"s{n}")
    assert hl.exhausted
    message = hl.stop()
    assert "handed off 2 times" in message and "--no-handoff" in message and "\n" not in message
    assert seen[-1].payload["phase"] == "stopped"
    archived = list((tmp_path / "notes" / "archive" / "handoff").glob("work-*.md"))
    assert len(archived) == 1


def test_no_handoff_is_decided_when_none_is_due(tmp_path: Path) -> None:
    hl, seen = loop(tmp_path)
    hl.observe(assistant(160_000), live_workers=False)
    assert hl.after(due=False) == Decision("go_on") and not hl.after(due=False).hands_off
    assert hl.after(due=False, overflow=("API Error: 500 boom", None)) == Decision("go_on")
    assert [e.payload["phase"] for e in seen] == ["near"], "deciding nothing says nothing"


def test_a_due_handoff_is_written_by_the_session_and_names_the_workers_it_stops(tmp_path: Path) -> None:
    hl, seen = loop(tmp_path)
    hl.observe(assistant(180_000), live_workers=True)
    decision = hl.after(due=True, stopped=["count widgets"])
    assert decision.action == "write" and decision.hands_off and decision.stopped == ("count widgets",)
    assert decision.prompt.startswith("Your context is nearly full (180,000 of a 200,000-token window)")
    assert 'still running: "count widgets"' in decision.prompt
    assert [e.payload["phase"] for e in seen] == ["near", "writing"]


def test_an_overflow_is_rebuilt_without_a_writing_round_and_calibrates_the_window(
    tmp_path: Path, isolated_home: Path
) -> None:
    hl, seen = loop(tmp_path)
    hl.observe(assistant(120_000), live_workers=False)
    errors = ("prompt is too long: 210000 tokens > 190000 maximum", None)
    decision = hl.after(due=False, overflow=errors, stopped=["w"])
    assert decision == Decision("rebuild", overflow=errors, stopped=("w",)) and decision.hands_off
    assert "writing" not in [e.payload.get("phase") for e in seen]
    doc, why = hl.document(decision, None)
    assert why == OVERFLOW_WHY and doc.degraded and "TASK" in doc.scene
    assert resolve_window().tokens == 190_000, "the limit the API named is remembered"


def test_a_resumed_session_past_the_handoff_point_is_handed_off_before_it_goes_on(tmp_path: Path) -> None:
    hl, _ = loop(tmp_path)
    assert hl.before(100_000) == Decision("go_on")
    decision = hl.before(160_000)
    assert decision.action == "write" and "160,000 of a 200,000-token window" in decision.prompt


def test_past_max_generations_the_decision_is_to_stop(tmp_path: Path) -> None:
    hl, seen = loop(tmp_path, max_generations=1)
    hl.take_over(Handoff(doing="d", next_step="n"), "s1")
    decision = hl.after(due=False, overflow=("Prompt is too long",))
    assert decision.action == "stop" and not decision.hands_off and "handed off 1 time in" in decision.reason
    assert seen[-1].payload["phase"] == "stopped" and seen[-1].text == decision.reason


def test_overflow_limit_reads_the_apis_numbers() -> None:
    assert overflow_limit("prompt is too long: 210000 tokens > 200000 maximum") == 200_000
    assert overflow_limit("Prompt is too long", None) == 0


@pytest.mark.parametrize(
    ("handoff", "compact", "expected"),
    [
        (True, None, {"DISABLE_AUTO_COMPACT": "1"}),  # handoff replaces the harness's compaction
        (HandoffPolicy(window=300_000), None, {"DISABLE_AUTO_COMPACT": "1"}),
        (False, None, None),  # --no-handoff: the harness compacts by itself again
        (HandoffPolicy(enabled=False), None, None),
        (True, CompactPolicy("auto"), None),  # a spec's own policy is respected
    ],
)
def test_handoff_turns_the_harness_compaction_off(
    workspace: Path, handoff: object, compact: CompactPolicy | None, expected: dict[str, str] | None
) -> None:
    with Runtime(workspace, workspace / "runs", handoff=handoff) as rt:  # type: ignore[arg-type]
        options = rt._launcher().options(AgentSpec("r", "", compact=compact), resume=None, fork=False, resume_at=None)
        assert isinstance(rt.handoff, HandoffPolicy)
    # The harness's retry settings flower adds (test_limit_wait.py) are not the compaction's business.
    compaction = {k: v for k, v in (options.env or {}).items() if not k.startswith("CLAUDE_CODE_RETRY_WATCHDOG")}
    compaction.pop("CLAUDE_CODE_MAX_RETRIES", None)
    assert (compaction or None) == expected


def test_the_renderer_shows_each_phase(tmp_path: Path) -> None:
    out = io.StringIO()
    view = Renderer(out, color=False)
    view.render(Event("handoff", "context 131.0K/200.0K · about 19.0K to the handoff", payload={"phase": "near"}))
    view.render(Event("handoff", "context 151.0K/200.0K: writing a handoff", payload={"phase": "writing"}))
    view.render(
        Event(
            "handoff",
            "context full in step 'w': handed off",
            payload={"phase": "done", "path": "/n/handoff-w.md", "degraded": False},
        )
    )
    view.render(Event("handoff", "handed off 8 times", payload={"phase": "stopped"}))
    lines = out.getvalue().splitlines()
    assert lines == [
        "  ~ context 131.0K/200.0K · about 19.0K to the handoff",
        "  # context 151.0K/200.0K: writing a handoff",
        "  # context full in step 'w': handed off",
        "    handoff: /n/handoff-w.md",
        "  x handed off 8 times",
    ]
