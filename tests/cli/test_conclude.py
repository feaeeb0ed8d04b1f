"""The one way ``go`` and ``run`` end a workflow: `conclude` reads the `RunResult` and prints the answer and the
closing line, then exits 0, or 1/3/4/130 with one line naming the step and the reason. No model: results by hand."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import ToolResultBlock, UserMessage

from flower_cli import Event, RunResult, StepResult, normalize
from flower_cli._shared.exits import Exit, ExitCode
from flower_cli.cli._global_options import GlobalOptions
from flower_cli.cli.actions.closing import conclude
from flower_cli.runtime._harness_log import HarnessLog
from flower_cli.view import JsonRenderer, Renderer


class _Manifest:
    notes: list[str] = []


class _Runtime:
    manifest = _Manifest()
    manifest_path = Path("runs/manifest.json")
    harness_log = HarnessLog(Path("runs/harness.log"))  # nothing written: no diagnostics line

    def total_cost(self) -> float:
        return 0.5


def _end(
    outcome: RunResult, *, json_mode: bool = False, events: tuple[Event, ...] = (), **kw: Any
) -> tuple[int, str, str, list[dict[str, Any]]]:
    """(exit code, the exit line, the terminal's text, the JSON events) of concluding ``outcome``, after the
    run's ``events`` went where the command sends them (the renderer, or the JSON sink with ``--json``)."""
    screen, out = io.StringIO(), io.StringIO()
    view = Renderer(screen, color=False)
    sink: Any = JsonRenderer(out) if json_mode else view
    opts = GlobalOptions(Path("."), Path("runs"), False, False, False, json_mode)
    for event in events:
        sink(event)
    code, line = 0, ""
    try:
        conclude(opts, view, sink, _Runtime(), outcome, **kw)  # type: ignore[arg-type]
    except Exit as exit_:
        code, line = int(exit_.code), exit_.message
    return code, line, screen.getvalue(), [json.loads(x) for x in out.getvalue().splitlines()]


def _result(**kw: Any) -> StepResult:
    return StepResult(**{"ok": True, "text": "the answer", **kw})


def test_a_run_that_went_through_ends_with_its_last_answer(capsys: pytest.CaptureFixture[str]) -> None:
    outcome = RunResult({}, results={"a": _result(step="a", text="first"), "b": _result(step="b")})
    code, line, screen, _ = _end(outcome)
    assert (code, line) == (0, "") and capsys.readouterr().out == "the answer\n"
    assert "$0.5" in screen and "manifest.json" in screen


def test_a_stopped_step_names_itself_and_its_reason() -> None:
    failed = _result(step="b", ok=False, error="boom")
    code, line, _, _ = _end(RunResult({}, results={"a": _result(step="a"), "b": failed}, failed_at="b"))
    assert code == ExitCode.NOT_DONE and line == "stopped at step 'b': boom"
    aborted = RunResult({}, results={"b": failed}, failed_at="b", aborted="human said stop")
    assert _end(aborted)[1] == "stopped at step 'b': human said stop"


def test_a_gate_that_never_passed_says_so_and_never_exits_0() -> None:
    outcome = RunResult({}, results={"work": _result(step="work#round3")}, failed_at="work")
    code, line, _, _ = _end(outcome)
    assert code == ExitCode.NOT_DONE and line == "stopped at step 'work': its gate did not pass in any round"
    assert _end(outcome, not_passed="no result")[1] == "stopped at step 'work': no result"


def test_unmet_is_the_reason_and_the_done_events_too_unless_the_run_recorded_one() -> None:
    outcome = RunResult({}, results={"work": _result(step="work")}, failed_at="work")
    code, line, _, events = _end(outcome, json_mode=True, unmet="the goal was not reached", see="look at goal.md")
    assert code == ExitCode.NOT_DONE and line == "stopped at step 'work': the goal was not reached; look at goal.md"
    [done] = events
    assert done["kind"] == "done" and not done["ok"] and done["aborted"] == "the goal was not reached"
    recorded = RunResult({}, results={"work": _result(step="work")}, failed_at="work", aborted="nobody answered")
    assert _end(recorded, unmet="not reached")[1] == "stopped at step 'work': nobody answered"
    went_through = RunResult({}, results={"work": _result(step="work")})
    assert _end(went_through, json_mode=True, unmet="not reached")[3][0]["aborted"] is None


def test_see_is_added_unless_the_reason_already_points_somewhere() -> None:
    pointed = RunResult({}, results={"w": _result(step="w")}, failed_at="w", aborted="x; look at goal.md")
    assert _end(pointed, see="see runs/manifest.json")[1] == "stopped at step 'w': x; look at goal.md"
    plain = RunResult({}, results={"w": _result(step="w", ok=False)}, failed_at="w")
    assert _end(plain, see="see runs/manifest.json")[1] == "stopped at step 'w': no result; see runs/manifest.json"


@pytest.mark.parametrize(
    ("error", "code"),
    [
        ("network not back within 600s", ExitCode.OFFLINE),
        ("interrupted-by-human", ExitCode.INTERRUPTED),
        ("No space left on device", ExitCode.CONFIG),
        ("something else", ExitCode.NOT_DONE),
    ],
)
def test_the_culprits_error_decides_the_exit_code(error: str, code: ExitCode) -> None:
    stopped = RunResult({}, results={"w": _result(step="w", ok=False, error=error)}, failed_at="w")
    assert _end(stopped)[0] == code
    # go: the step ran, its judge could not: the judge's failure decides
    judged = RunResult({}, results={"w": _result(step="w")}, failed_at="w", aborted="the judge could not run")
    culprit = StepResult(step="w·judge#1", ok=False, error=error)
    assert _end(judged, culprit=culprit)[0] == code


def _refused(text: str) -> Event:
    """A tool result the harness wrote instead of running the call, as the event stream marks it."""
    message = UserMessage(content=[ToolResultBlock("toolu_1", text, is_error=True)], tool_use_result="Error: " + text)
    [event] = normalize(message)
    assert isinstance(event.payload.get("denied"), dict)
    return event


REFUSALS = (
    _refused("Permission to use Bash with command rm -f x has been denied."),
    _refused("Claude requested permissions to use WebFetch, but you haven't granted it yet."),
)


@pytest.mark.parametrize("json_mode", [False, True])
def test_refused_calls_are_counted_in_the_closing_line_with_or_without_json(json_mode: bool) -> None:
    outcome = RunResult({}, results={"w": _result(step="w")})
    code, _, screen, events = _end(outcome, json_mode=json_mode, events=REFUSALS)
    assert code == 0
    assert screen.rstrip("\n").endswith("· 2 tool calls refused"), screen
    if json_mode:
        assert [e["kind"] for e in events] == ["tool_result", "tool_result", "done"]
        assert events[-1]["refused"] == 2


def test_a_run_without_refusals_says_none_and_its_done_event_counts_zero() -> None:
    code, _, screen, events = _end(RunResult({}, results={"w": _result(step="w")}), json_mode=True)
    assert code == 0 and "refused" not in screen and events[-1]["refused"] == 0
