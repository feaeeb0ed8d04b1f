"""The go path's pieces without a model: the flow's gates and rounds (over a runner that replays answers), the
driver's input splitting and routing, the command's option checks. The real binary runs in tests/e2e/test_go_e2e.py."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from flower_cli import Brief, Event, Goal, HumanChannel, StepResult
from flower_cli._shared.exits import Exit, ExitCode
from flower_cli.cli._global_options import GlobalOptions
from flower_cli.cli.actions.go import _check, _not_applying
from flower_cli.go import GoSettings, GoState, build_go_flow, go_workbench
from flower_cli.go._driver import CtrlC, GoDriver, Line, split_input
from flower_cli.view import Renderer
from flower_cli.workflow import RunResult

BRIEF = "## Goal\nA greeter.\n## Acceptance criteria\n- hello.txt\n## Boundaries\n- no web\n## Unknowns and assumptions\n- English"
GOAL = "## Goal\nhello.txt greets.\n## Checks\n- hello.txt exists"


def verdict(state: str, reason: str = "because") -> str:
    return f"## Verdict\n{state}\n## Reason\n{reason}\n## Failed checks\n- hello.txt exists"


class Replay:
    """A StepRunner whose steps answer from lists keyed by the start of the step name."""

    def __init__(self, workspace: Path, answers: dict[str, list[str]], workbench: Any = None) -> None:
        self.workspace = workspace
        self.run_dir = workspace / "runs"
        self.workbench = workbench  # the go command opens its runtime with the flow's workbench
        self.answers = answers
        self.calls: list[tuple[str, str, str | None]] = []

    async def run(
        self,
        spec: Any,
        prompt: str,
        *,
        step_name: str | None = None,
        resume: str | None = None,
        fork: bool = False,
        resume_at: str | None = None,
        on_event: Any = None,
        on_session: Callable[[str], Any] | None = None,
    ) -> StepResult:
        name = step_name or spec.name
        self.calls.append((name, prompt, resume))
        key = "judge" if "·judge#" in name else name.split("#")[0]
        text = self.answers[key].pop(0)
        sid = resume or f"sid-{name}"
        return StepResult(step=name, ok=True, text=text, session_id=sid)

    def has_session(self, session_id: str) -> bool:
        return False


def run_flow(
    tmp_path: Path,
    answers: dict[str, list[str]],
    *,
    settings: GoSettings | None = None,
    answer: Callable[[HumanChannel], None] | None = None,
    timeout_s: float | None = 0,
) -> tuple[RunResult, Replay, HumanChannel, GoState]:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    wb = go_workbench(ws)
    events: list[Event] = []
    channel = HumanChannel(timeout_s=timeout_s, log_path=wb.notes / "qa-log.md", amend_path=wb.notes / "brief.md")

    def on_event(event: Event) -> None:
        events.append(event)
        if answer is not None and event.kind == "ask" and event.payload.get("state") == "asked":
            threading.Thread(target=answer, args=(channel,), daemon=True).start()

    flow = build_go_flow(settings or GoSettings(ask="build a greeter"), channel=channel, workbench=wb)
    runner = Replay(ws, answers, workbench=wb)
    ctx = anyio.run(lambda: flow.run(runner, on_event=on_event))
    ctx.context["_events"] = events
    return ctx, runner, channel, flow.state


def test_rounds_continue_the_same_session_with_the_gaps_and_stop_after_the_last(tmp_path: Path) -> None:
    ctx, runner, _, state = run_flow(
        tmp_path,
        {
            "clarify": [BRIEF],
            "goal": [GOAL],
            "work": ["r1", "r2"],
            "judge": [verdict("not yet", "GAP-1"), verdict("not yet", "GAP-2")],
        },
        settings=GoSettings(ask="x", rounds=2),
    )
    assert [c[0] for c in runner.calls] == ["clarify", "goal", "work", "work·judge#1", "work#round2", "work·judge#2"]
    assert runner.calls[4][2] == "sid-work" and "GAP-1" in runner.calls[4][1]
    assert ctx.failed_at == "work" and state.verdict.reason == "GAP-2"
    assert Brief.load(tmp_path / "ws" / ".flower" / "notes" / "brief.md").complete
    assert Goal.load(tmp_path / "ws" / ".flower" / "notes" / "goal.md").complete


def test_an_incomplete_brief_is_sent_back_naming_what_is_missing(tmp_path: Path) -> None:
    ctx, runner, _, _ = run_flow(
        tmp_path, {"clarify": ["## Goal\nonly a goal", BRIEF]}, settings=GoSettings(ask="x", clarify_only=True)
    )
    assert [c[0] for c in runner.calls] == ["clarify", "clarify#round2"]
    assert "Acceptance criteria" in runner.calls[1][1] and ctx.failed_at is None


def test_unreachable_and_nobody_answers_aborts_with_the_reason(tmp_path: Path) -> None:
    ctx, runner, channel, _ = run_flow(
        tmp_path, {"clarify": [BRIEF], "goal": [GOAL], "work": ["r1"], "judge": [verdict("unreachable", "NEEDS-A-MAC")]}
    )
    assert ctx.failed_at == "work" and "NEEDS-A-MAC" in ctx.aborted and "nobody answered" in ctx.aborted
    assert [a.state for a in channel.asks] == ["timeout"]


@pytest.mark.parametrize(
    ("reply", "achieved", "fed_back"),
    [
        ("1", True, None),
        ("3", False, "judge is wrong"),
        ("it works on Linux too", False, "it works on Linux too"),
    ],
)
def test_unreachable_answers(tmp_path: Path, reply: str, achieved: bool, fed_back: str | None) -> None:
    def person(channel: HumanChannel) -> None:
        from flower_cli.go._routing import Answer, route_line

        route = route_line(reply, channel.pending())
        assert isinstance(route, Answer)
        channel.answer(route.id, route.text)

    answers = {
        "clarify": [BRIEF],
        "goal": [GOAL],
        "work": ["r1", "r2"],
        "judge": [verdict("unreachable", "NEEDS-A-MAC"), verdict("achieved")],
    }
    ctx, runner, _, state = run_flow(tmp_path, answers, answer=person, timeout_s=60)
    assert ctx.failed_at is None
    if achieved:
        assert [c[0] for c in runner.calls][-1] == "work·judge#1" and state.accepted
    else:
        assert fed_back is not None and fed_back in runner.calls[-2][1]  # work#round2's prompt


def test_changing_the_goal_amends_the_goal_file(tmp_path: Path) -> None:
    replies = iter(["2", "hello.txt may be in French"])

    def person(channel: HumanChannel) -> None:
        from flower_cli.go._routing import Answer, route_line

        route = route_line(next(replies), channel.pending())
        assert isinstance(route, Answer)
        channel.answer(route.id, route.text)

    answers = {
        "clarify": [BRIEF],
        "goal": [GOAL],
        "work": ["r1", "r2"],
        "judge": [verdict("unreachable"), verdict("achieved")],
    }
    ctx, runner, _, _ = run_flow(tmp_path, answers, answer=person, timeout_s=60)
    assert ctx.failed_at is None
    goal = Goal.load(tmp_path / "ws" / ".flower" / "notes" / "goal.md")
    assert "hello.txt may be in French" in goal.statement and goal.checks == ("hello.txt exists",)
    assert "The new goal: hello.txt may be in French" in runner.calls[-2][1]


def test_unverifiable_checks_are_warned_about(tmp_path: Path) -> None:
    goal = "## Goal\nworks\n## Checks\n- [cannot verify here: needs an iPhone] the app opens\n- it builds"
    ctx, _, _, _ = run_flow(
        tmp_path, {"clarify": [BRIEF], "goal": [goal], "work": ["r1"], "judge": [verdict("achieved")]}
    )
    [notice] = [e for e in ctx["_events"] if e.kind == "notice"]
    assert notice.payload["unverifiable"] == 1 and notice.payload["total"] == 2


def test_a_wake_sentence_derives_the_goal_again_and_reaches_the_work_session(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    notes = go_workbench(ws).notes
    Brief.parse(BRIEF).write(notes / "brief.md")
    Goal.parse(GOAL).write(notes / "goal.md")
    Brief.amend(notes / "brief.md", "also a README", "Added at wake")
    ctx, runner, _, _ = run_flow(
        tmp_path,
        {
            "goal": [GOAL.replace("- hello.txt exists", "- hello.txt exists\n- README.md exists")],
            "work": ["r1"],
            "judge": [verdict("achieved")],
        },
        settings=GoSettings(ask="also a README", amended=True),
    )
    assert [c[0] for c in runner.calls] == ["goal", "work", "work·judge#1"]
    assert "also a README" in runner.calls[0][1]
    assert len(Goal.load(notes / "goal.md").checks) == 2


# --- the driver's input ---------------------------------------------------------------------------


def test_split_input_lines_and_ctrl_c() -> None:
    items, rest = split_input("one\ntw", ctrl_c=True)
    assert items == [Line("one")] and rest == "tw"
    items, rest = split_input("half typed\x03words\r\n", ctrl_c=True)
    assert items == [CtrlC(), Line("words")] and rest == ""
    items, rest = split_input("a\x03b\n", ctrl_c=False)
    assert items == [Line("a\x03b")]


class _Runtime:
    def __init__(self) -> None:
        self.interrupted: list[str] = []
        self.workspace = Path(".")
        self.run_dir = Path("runs")

    def interrupt(self, message: str = "") -> None:
        self.interrupted.append(message)


def _driver(
    json_mode: bool = False, interactive: bool = True
) -> tuple[GoDriver, _Runtime, HumanChannel, list[Event], Any]:
    import io

    runtime = _Runtime()
    channel = HumanChannel(timeout_s=60)
    events: list[Event] = []
    screen = io.StringIO()
    view = Renderer(screen, color=False)
    driver = GoDriver(
        runtime, channel, view=view, sink=events.append, json_mode=json_mode, interactive=interactive, stdin_fd=0
    )  # type: ignore[arg-type]
    return driver, runtime, channel, events, screen


def test_ctrl_c_then_words_interrupts_and_empty_words_do_not() -> None:
    driver, runtime, _, _, screen = _driver()
    driver.ctrl_c()
    assert driver.awaiting_words and "what do you want to tell it?" in screen.getvalue()
    driver.line("focus on tests")
    assert runtime.interrupted == ["focus on tests"] and not driver.awaiting_words
    driver.ctrl_c()
    driver.line("")
    assert runtime.interrupted == ["focus on tests"]
    driver.ctrl_c()
    driver.ctrl_c()
    assert driver.interrupted


def test_in_a_pipe_the_first_ctrl_c_quits() -> None:
    driver, _, _, _, _ = _driver(interactive=False)
    driver.ctrl_c()
    assert driver.interrupted


def test_lines_with_nothing_pending_are_mail_and_bad_json_is_said() -> None:
    driver, _, channel, events, _ = _driver()
    driver.line("also export CSV")
    assert [m.text for m in channel.mail] == ["also export CSV"]
    driver, _, channel, events, _ = _driver(json_mode=True)
    driver.line("{not json")
    driver.line('{"mail": "from a program"}')
    assert [m.text for m in channel.mail] == ["from a program"]
    assert events[0].kind == "notice" and events[0].payload["input_error"]


def test_end_of_input_makes_later_questions_fall_through() -> None:
    driver, _, channel, _, _ = _driver()
    driver.end_of_input()
    assert not channel.listening
    assert anyio.run(channel.ask, "anyone?").startswith("Nobody answered")


# --- the command's options ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "opts", [GoSettings(rounds=0), GoSettings(asks=-1), GoSettings(timeout=-1.0), GoSettings(timeout=float("nan"))]
)
def test_values_no_run_can_use_are_usage_errors(opts: GoSettings) -> None:
    with pytest.raises(Exit) as caught:
        _check(opts)
    assert caught.value.code == ExitCode.USAGE


def test_one_settings_type_serves_the_command_and_the_flow() -> None:
    assert GoSettings().round_limit == 3 and GoSettings(rounds=1).round_limit == 1
    assert GoSettings().timeout_s == 1800.0 and GoSettings(timeout=0).timeout_s == 0
    assert GoSettings(timeout=float("inf")).timeout_s is None


def test_options_that_do_not_apply_are_said() -> None:
    g = GlobalOptions(Path("."), Path("runs"), False, True, True, False)
    notes = _not_applying(GoSettings(goal=False, rounds=2, judge_can_run=True), g)
    joined = "\n".join(notes)
    for flag in ("-W", "-T", "--rounds", "--judge-can-run"):
        assert flag in joined
    assert _not_applying(GoSettings(), GlobalOptions(Path("."), Path("runs"), False, False, False, False)) == []


def test_a_workflow_mistake_leaves_the_driver_as_itself_not_as_an_exception_group(tmp_path: Path) -> None:
    import os

    from flower_cli import AgentSpec, Step, Workflow, WorkflowError

    def bad_gate(result: StepResult, ctx: dict[str, Any]) -> bool:
        raise RuntimeError("gate exploded")

    ws = tmp_path / "ws"
    ws.mkdir()
    read, write = os.pipe()
    os.close(write)  # stdin at its end at once
    driver, _, _, _, _ = _driver(interactive=False)
    driver.stdin_fd = read
    driver.runtime = Replay(ws, {"check": ["an answer"]})  # type: ignore[assignment]
    flow = Workflow([Step("check", AgentSpec("x", ""), "go", gate=bad_gate)], continuous=False)
    with pytest.raises(WorkflowError, match="gate exploded"):
        anyio.run(driver.run, flow)
    os.close(read)
