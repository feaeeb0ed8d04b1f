"""The workflow engine as the unit: every Step/Workflow field and failure mode, against a fake runtime.

The fake runs nothing: each ``run`` call is recorded, gets a session id the way the real Runtime would
(a new one for a fresh launch or a fork, the same one for a resume), announces it through ``on_session``
before the "model" answers, and returns what the test's plan says.
"""

from __future__ import annotations

import itertools
import json
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest

from flower_cli import (
    AgentSpec,
    Event,
    RunContext,
    RunResult,
    Step,
    StepAbort,
    StepResult,
    Workflow,
    WorkflowError,
    coordinator,
    worker,
)
from flower_cli.runtime import Lineage

SPEC = AgentSpec("w", "work")
JUDGE = AgentSpec("judge", "judge")


@dataclass
class Call:
    spec: AgentSpec
    prompt: str
    step_name: str
    resume: str | None
    fork: bool
    session_id: str | None = None


@dataclass
class Outcome:
    ok: bool = True
    text: str | None = None
    session: bool = True  # False: the attempt failed before any session existed
    error: str | None = None
    during: Callable[[], None] | None = None  # runs after the session id was announced, before the answer


Plan = Callable[[Call], Outcome]


@dataclass
class FakeRuntime:
    run_dir: Path
    workspace: Path
    plan: Plan = lambda call: Outcome()
    calls: list[Call] = field(default_factory=list)
    known: set[str] = field(default_factory=set)
    _ids: Any = field(default_factory=lambda: itertools.count(1))

    async def run(
        self,
        spec: AgentSpec,
        prompt: str,
        *,
        step_name: str | None = None,
        resume: str | None = None,
        fork: bool = False,
        resume_at: str | None = None,
        on_event: Callable[[Event], Any] | None = None,
        on_session: Callable[[str], Any] | None = None,
    ) -> StepResult:
        call = Call(spec, prompt, step_name or spec.name, resume, fork)
        self.calls.append(call)
        sid = resume if resume and not fork else f"s{next(self._ids)}"
        outcome = self.plan(call)
        if outcome.session:
            call.session_id = sid
            self.known.add(sid)
            if on_session is not None:
                on_session(sid)
            if outcome.during is not None:
                outcome.during()
        else:
            sid = None
        text = outcome.text if outcome.text is not None else f"answer of {call.step_name}"
        return StepResult(step=call.step_name, session_id=sid, ok=outcome.ok, text=text, error=outcome.error)

    def has_session(self, session_id: str) -> bool:
        return session_id in self.known


@pytest.fixture
def rt(tmp_path: Path) -> FakeRuntime:
    ws = tmp_path / "ws"
    ws.mkdir()
    return FakeRuntime(tmp_path / "runs", ws)


def run(workflow: Workflow, runtime: FakeRuntime, **kw: Any) -> RunResult:
    return anyio.run(lambda: workflow.run(runtime, **kw))


def names(runtime: FakeRuntime) -> list[str]:
    return [c.step_name for c in runtime.calls]


# --- order, ctx, when -----------------------------------------------------------------------------------


def test_steps_run_in_order_and_later_prompts_read_earlier_answers(rt: FakeRuntime) -> None:
    seen: list[RunContext] = []

    def when(ctx: dict[str, Any], run: RunContext) -> bool:
        seen.append(run)
        return True

    wf = Workflow(
        [Step("a", SPEC, "first"), Step("b", SPEC, lambda ctx: f"after {ctx['a']}", when=when)], continuous=False
    )
    ctx = run(wf, rt)
    assert names(rt) == ["a", "b"] and rt.calls[1].prompt == "after answer of a"
    assert ctx["a"] == "answer of a" and ctx["b"] == "answer of b" and ctx.failed_at is None
    assert seen[0].runtime is rt and set(ctx.results) == {"a", "b"}


def test_when_false_skips_entirely_and_async_when_works(rt: FakeRuntime) -> None:
    events: list[Event] = []

    async def later(ctx: dict[str, Any]) -> bool:
        return True

    def pour(ctx: dict[str, Any]) -> bool:
        ctx["a"] = "frozen brief"  # a `when` may pour a frozen file into ctx and skip
        return False

    wf = Workflow(
        [Step("a", SPEC, "x", when=pour), Step("b", SPEC, lambda ctx: ctx["a"], when=later)], continuous=False
    )
    ctx = run(wf, rt, on_event=events.append)
    assert names(rt) == ["b"] and rt.calls[0].prompt == "frozen brief"
    steps = [e for e in events if e.kind == "step"]
    assert [(e.text, e.payload["index"], e.payload["total"]) for e in steps] == [("b", 2, 2)]
    assert "a" not in ctx.results


def test_step_event_carries_index_total_resumed_and_woke(rt: FakeRuntime) -> None:
    events: list[Event] = []
    run(Workflow([Step("a", SPEC, "x")]), rt, on_event=events.append)
    [step] = [e for e in events if e.kind == "step"]
    assert step.payload == {"index": 1, "total": 1, "resumed": False, "woke": 1, "note": ""}


# --- gate, rounds, retries -----------------------------------------------------------------------------


def test_gate_pass_and_reduce_decide_ctx(rt: FakeRuntime) -> None:
    seen: list[str] = []

    async def gate(result: StepResult, ctx: dict[str, Any]) -> bool:
        seen.append(result.text)
        return True

    async def reduce(result: StepResult, ctx: dict[str, Any]) -> str:
        return result.text.upper()

    ctx = run(Workflow([Step("a", SPEC, "x", gate=gate, reduce=reduce)], continuous=False), rt)
    assert seen == ["answer of a"] and ctx["a"] == "ANSWER OF A" and names(rt) == ["a"]


def test_rejections_continue_the_same_session_with_the_feedback_as_rounds(rt: FakeRuntime) -> None:
    verdicts = iter([False, False, True])
    feedback: list[int] = []

    def on_reject(result: StepResult, ctx: dict[str, Any]) -> str:
        feedback.append(len(feedback) + 1)
        return f"gaps of round {len(feedback)}"

    step = Step("work", SPEC, "build it", gate=lambda r, c: next(verdicts), on_reject=on_reject, retries=2)
    ctx = run(Workflow([step], continuous=False), rt)
    assert names(rt) == ["work", "work#round2", "work#round3"]
    first = rt.calls[0].session_id
    assert [c.resume for c in rt.calls] == [None, first, first] and not any(c.fork for c in rt.calls)
    assert [c.prompt for c in rt.calls] == ["build it", "gaps of round 1", "gaps of round 2"]
    assert ctx["work"] == "answer of work#round3" and ctx.failed_at is None


def test_rounds_run_out_and_the_step_fails(rt: FakeRuntime) -> None:
    step = Step("work", SPEC, "x", gate=lambda r, c: False, on_reject=lambda r, c: "again", retries=1)
    ctx = run(Workflow([step, Step("next", SPEC, "y")], continuous=False), rt)
    assert names(rt) == ["work", "work#round2"] and ctx.failed_at == "work" and "work" not in ctx


def test_a_rejection_without_feedback_relaunches_fresh(rt: FakeRuntime) -> None:
    first, second = iter([False, True]), iter([False, True])
    step = Step("work", SPEC, "x", gate=lambda r, c: next(first), on_reject=lambda r, c: "", retries=1)
    step2 = Step("other", SPEC, "y", gate=lambda r, c: next(second), retries=1)  # no on_reject at all
    run(Workflow([step, step2], continuous=False), rt)
    assert names(rt) == ["work", "work#round2", "other", "other#round2"]
    assert [(c.resume, c.prompt) for c in rt.calls] == [(None, "x"), (None, "x"), (None, "y"), (None, "y")]


def test_a_failed_attempt_is_a_retry_not_a_round_and_skips_gate_and_on_reject(rt: FakeRuntime) -> None:
    outcomes = iter([Outcome(ok=False, error="boom"), Outcome(ok=False, error="boom"), Outcome()])
    rt.plan = lambda call: next(outcomes)
    gated: list[str] = []
    rejected: list[str] = []
    step = Step(
        "work",
        SPEC,
        "x",
        gate=lambda r, c: gated.append(r.step) or True,
        on_reject=lambda r, c: rejected.append(r.step) or "stale feedback",
        retries=2,
    )
    ctx = run(Workflow([step], continuous=False), rt)
    assert names(rt) == ["work", "work#retry1", "work#retry2"]
    assert gated == ["work#retry2"] and rejected == [], "the original fed stale verdict feedback to a failed round"
    assert all(c.resume is None and c.prompt == "x" for c in rt.calls)
    assert ctx["work"] == "answer of work#retry2"


def test_retries_and_rounds_are_numbered_separately(rt: FakeRuntime) -> None:
    outcomes = iter([Outcome(), Outcome(ok=False), Outcome()])
    rt.plan = lambda call: next(outcomes)
    verdicts = iter([False, True])
    step = Step("work", SPEC, "x", gate=lambda r, c: next(verdicts), on_reject=lambda r, c: "fix it", retries=2)
    run(Workflow([step], continuous=False), rt)
    assert names(rt) == ["work", "work#round2", "work#retry1"]


# --- StepAbort, on_fail, user errors ------------------------------------------------------------------


def test_step_abort_in_a_gate_stops_at_once_and_stops_the_run(rt: FakeRuntime) -> None:
    def gate(result: StepResult, ctx: dict[str, Any]) -> bool:
        raise StepAbort("unreachable and nobody answered")

    ctx = run(Workflow([Step("work", SPEC, "x", gate=gate, retries=5), Step("after", SPEC, "y")], continuous=False), rt)
    assert names(rt) == ["work"], "no retries are spent after an abort"
    assert ctx.aborted == "unreachable and nobody answered" and ctx.failed_at == "work"


def test_step_abort_in_when_and_on_reject(rt: FakeRuntime) -> None:
    def when(ctx: dict[str, Any]) -> bool:
        raise StepAbort("no brief")

    def on_reject(result: StepResult, ctx: dict[str, Any]) -> str:
        raise StepAbort("human said stop")

    ctx = run(
        Workflow(
            [
                Step("a", SPEC, "x", when=when, on_fail="continue"),
                Step("b", SPEC, "y", gate=lambda r, c: False, on_reject=on_reject, retries=3),
            ],
            continuous=False,
        ),
        rt,
    )
    assert names(rt) == ["b"] and ctx.aborted == "human said stop" and ctx.failed_at == "b"


def test_on_fail_skip_and_continue_let_the_run_go_on(rt: FakeRuntime) -> None:
    rt.plan = lambda call: Outcome(ok=call.step_name != "flaky", text="partial" if call.step_name == "flaky" else None)
    wf = Workflow(
        [
            Step("flaky", SPEC, "x", on_fail="skip"),
            Step("flaky2", SPEC, lambda ctx: f"skip left {ctx['flaky']!r}"),
        ],
        continuous=False,
    )
    ctx = run(wf, rt)
    assert ctx["flaky"] == "" and rt.calls[1].prompt == "skip left ''" and ctx.failed_at is None
    rt.calls.clear()
    wf2 = Workflow(
        [Step("flaky", SPEC, "x", on_fail="continue"), Step("next", SPEC, lambda ctx: ctx["flaky"])], continuous=False
    )
    ctx2 = run(wf2, rt)
    assert ctx2["flaky"] == "partial" and rt.calls[1].prompt == "partial"


def test_a_gate_that_raises_is_a_one_line_error_naming_the_step(rt: FakeRuntime) -> None:
    def gate(result: StepResult, ctx: dict[str, Any]) -> bool:
        raise ValueError("bad parse")

    with pytest.raises(WorkflowError) as caught:
        run(Workflow([Step("check", SPEC, "x", gate=gate)], continuous=False), rt)
    message = str(caught.value)
    assert "'check'" in message and "gate" in message and "ValueError: bad parse" in message and "\n" not in message


def test_a_prompt_reading_a_missing_key_says_which_step_and_why(rt: FakeRuntime) -> None:
    wf = Workflow(
        [Step("a", SPEC, "x", when=lambda ctx: False), Step("b", SPEC, lambda ctx: ctx["a"])], continuous=False
    )
    with pytest.raises(WorkflowError, match=r"step 'b': its prompt raised KeyError.*skipped by its `when`"):
        run(wf, rt)


def test_on_reject_must_return_text(rt: FakeRuntime) -> None:
    step = Step("a", SPEC, "x", gate=lambda r, c: False, on_reject=lambda r, c: 3, retries=1)  # type: ignore[arg-type,return-value]
    with pytest.raises(WorkflowError, match="on_reject returned int"):
        run(Workflow([step], continuous=False), rt)


@pytest.mark.parametrize(
    ("make", "fragment"),
    [
        (lambda: Step("a", SPEC, "x", retries=-1), "retries"),
        (lambda: Step("a", SPEC, "x", on_fail="ignore"), "on_fail"),  # type: ignore[arg-type]
        (lambda: Step("a", SPEC, "x", fork=True), "fork=True needs resume_from"),
        (lambda: Step("", SPEC, "x"), "non-empty name"),
        (lambda: Step("a", "not a spec", "x"), "AgentSpec"),  # type: ignore[arg-type]
        (lambda: Step("a", SPEC, "x", gate="yes"), "gate must be a function"),  # type: ignore[arg-type]
        (lambda: Workflow([Step("a", SPEC, "x"), Step("a", SPEC, "y")]), "two steps are named 'a'"),
        (lambda: Workflow([Step("b", SPEC, "y", resume_from="a")]), "not an earlier step"),
        (lambda: Workflow([]), "non-empty list"),
    ],
)
def test_definition_mistakes_are_workflow_errors(make: Callable[[], Any], fragment: str) -> None:
    with pytest.raises(WorkflowError, match=fragment):
        make()


# --- sessions: resume_from, fork, lineage, continuity ---------------------------------------------------


def test_resume_from_and_fork(rt: FakeRuntime) -> None:
    wf = Workflow(
        [
            Step("draft", SPEC, "x"),
            Step("polish", SPEC, "y", resume_from="draft"),
            Step("variant", SPEC, "z", resume_from="draft", fork=True),
        ],
        continuous=False,
    )
    ctx = run(wf, rt)
    draft = rt.calls[0].session_id
    assert [(c.resume, c.fork) for c in rt.calls] == [(None, False), (draft, False), (draft, True)]
    assert ctx.sessions["variant"] != draft


def test_resume_from_a_step_without_session_is_an_error(rt: FakeRuntime) -> None:
    rt.plan = lambda call: Outcome(ok=call.step_name != "draft", session=call.step_name != "draft")
    wf = Workflow(
        [Step("draft", SPEC, "x", on_fail="continue"), Step("polish", SPEC, "y", resume_from="draft")], continuous=False
    )
    with pytest.raises(WorkflowError, match="step 'polish' resumes 'draft', which produced no session"):
        run(wf, rt)


def test_lineage_is_written_the_moment_a_session_appears_and_judges_stay_out(rt: FakeRuntime) -> None:
    lineage_file = rt.run_dir / "lineage.json"
    seen_during_run: list[dict[str, str]] = []

    def plan(call: Call) -> Outcome:
        # while the "model" is still answering, lineage must already name this step's session
        return Outcome(during=lambda: seen_during_run.append(dict(json.loads(lineage_file.read_text())["steps"])))

    rt.plan = plan

    async def gate(result: StepResult, ctx: dict[str, Any], run: RunContext) -> bool:
        verdict = await run.runtime.run(JUDGE, f"judge: {result.text}", step_name="work·judge#1", on_event=run.on_event)
        return bool(verdict.ok)

    run(Workflow([Step("work", SPEC, "x", gate=gate)]), rt)
    assert seen_during_run[0] == {"work": "s1"}
    assert names(rt) == ["work", "work·judge#1"]
    assert json.loads(lineage_file.read_text())["steps"] == {"work": "s1"}, "a judge never enters lineage"


def test_continuous_resumes_the_recorded_session_with_resume_prompt(rt: FakeRuntime) -> None:
    rt.known.add("old-session")
    Lineage.open(rt.run_dir, rt.workspace).remember("work", "old-session")
    events: list[Event] = []
    ctx = run(
        Workflow([Step("work", SPEC, "start over", resume_prompt=lambda ctx: "carry on")]), rt, on_event=events.append
    )
    assert rt.calls[0].resume == "old-session" and rt.calls[0].prompt == "carry on"
    [step] = [e for e in events if e.kind == "step"]
    assert step.payload["resumed"] is True and step.payload["woke"] == 1 == ctx.woke


def test_a_carried_session_is_not_resumed_again_by_a_retry(rt: FakeRuntime) -> None:
    rt.known.add("old-session")
    Lineage.open(rt.run_dir, rt.workspace).remember("work", "old-session")
    outcomes = iter([Outcome(ok=False, error="context overflow"), Outcome()])
    rt.plan = lambda call: next(outcomes)
    run(Workflow([Step("work", SPEC, "start", resume_prompt="carry on", retries=1)]), rt)
    assert [(c.resume, c.prompt) for c in rt.calls] == [("old-session", "carry on"), (None, "start")]
    assert json.loads((rt.run_dir / "lineage.json").read_text())["steps"]["work"] == rt.calls[1].session_id


def test_a_carried_session_that_still_yields_nothing_is_started_fresh_once_with_a_notice(rt: FakeRuntime) -> None:
    rt.known.add("old-session")
    Lineage.open(rt.run_dir, rt.workspace).remember("clarify", "old-session")
    rt.plan = lambda call: Outcome(text="FINE" if call.resume is None and call.step_name == "clarify#fresh" else "?")
    events: list[Event] = []
    step = Step(
        "clarify",
        SPEC,
        "start",
        resume_prompt="carry on",
        gate=lambda result, ctx: result.text == "FINE",
        on_reject=lambda result, ctx: "try again",
        retries=1,
        fresh_after_carried=True,
    )
    outcome = run(Workflow([step]), rt, on_event=events.append)
    assert [(c.step_name, c.resume, c.prompt) for c in rt.calls] == [
        ("clarify", "old-session", "carry on"),
        ("clarify#round2", "old-session", "try again"),
        ("clarify#fresh", None, "start"),
    ]
    assert outcome.failed_at is None and outcome["clarify"] == "FINE"
    [notice] = [e for e in events if e.kind == "notice" and e.payload.get("fresh")]
    assert "old-session" in notice.text and "fresh session" in notice.text
    assert json.loads((rt.run_dir / "lineage.json").read_text())["steps"]["clarify"] == rt.calls[2].session_id


def test_a_fresh_launch_happens_once_and_not_without_a_carried_session(rt: FakeRuntime) -> None:
    rt.plan = lambda call: Outcome(text="?")
    step = Step("goal", SPEC, "start", gate=lambda r, c: False, retries=0, fresh_after_carried=True)
    assert run(Workflow([step]), rt).failed_at == "goal"
    assert names(rt) == ["goal"], "nothing carried: no fresh launch"
    rt.calls.clear()
    second = run(Workflow([step]), rt)  # now lineage carries the session the first run left
    assert second.failed_at == "goal"
    assert names(rt) == ["goal", "goal#fresh"], "the carried session, then one fresh session, then stop"
    assert rt.calls[0].resume is not None and rt.calls[1].resume is None


def test_a_dead_recorded_session_starts_fresh_and_wakes_count(rt: FakeRuntime) -> None:
    Lineage.open(rt.run_dir, rt.workspace).remember("work", "gone-session")  # not in the store any more
    wf = Workflow([Step("work", SPEC, "start", resume_prompt="carry on")])
    first = run(wf, rt)
    assert rt.calls[0].resume is None and rt.calls[0].prompt == "start" and first.woke == 1
    second = run(Workflow([Step("work", SPEC, "start", resume_prompt="carry on")]), rt)
    assert rt.calls[1].resume == rt.calls[0].session_id and second.woke == 2


def test_not_continuous_writes_no_lineage_and_a_reused_ctx_starts_clean(rt: FakeRuntime) -> None:
    rt.plan = lambda call: Outcome(ok=len(rt.calls) > 1)
    wf = Workflow([Step("work", SPEC, "x")], continuous=False)
    first = run(wf, rt)
    assert first.failed_at == "work" and not (rt.run_dir / "lineage.json").exists()
    second = run(wf, rt)
    assert second.failed_at is None and rt.calls[1].resume is None, "no session carried over inside a reused ctx"


def test_on_step_sees_every_step_and_channel_gets_the_sink(rt: FakeRuntime) -> None:
    class FakeChannel:
        on_event: Callable[[Event], Any] | None = None
        ask_tool = "mcp__human__ask"
        inbox_tool = "mcp__human__inbox"

        def mcp_servers(self) -> dict[str, Any]:
            return {}

    channel = FakeChannel()
    rt.plan = lambda call: Outcome(ok=call.step_name == "a")
    seen: list[tuple[str, bool]] = []

    async def on_step(step: Step, result: StepResult) -> None:
        seen.append((step.name, result.ok))

    sink: list[Event] = []
    run(
        Workflow([Step("a", SPEC, "x"), Step("b", SPEC, "y")], channel=channel, continuous=False),
        rt,
        on_event=sink.append,
        on_step=on_step,
    )
    assert seen == [("a", True), ("b", False)] and channel.on_event == sink.append


# --- isolation ------------------------------------------------------------------------------------------


def test_isolated_workers_need_a_git_workspace_before_anything_runs(rt: FakeRuntime) -> None:
    lead = coordinator("lead", "", {"coder": worker("codes", "code", isolate=True)})
    with pytest.raises(WorkflowError, match=r"step 'work': worker 'coder' is isolated .* not a git repository"):
        run(Workflow([Step("prep", SPEC, "x"), Step("work", lead, "y")], continuous=False), rt)
    assert rt.calls == []
    subprocess.run(["git", "init", "-q", str(rt.workspace)], check=True)
    with pytest.raises(WorkflowError, match="no commit yet"):
        run(Workflow([Step("work", lead, "y")], continuous=False), rt)
    git = ["git", "-C", str(rt.workspace), "-c", "user.name=t", "-c", "user.email=t@e.invalid"]
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "init"], check=True)
    run(Workflow([Step("work", lead, "y")], continuous=False), rt)
    assert names(rt) == ["work"]


# --- Workflow.run_step: one step, as `run` would run it after the steps before it -----------------------------


def test_run_step_runs_only_the_named_step_with_the_earlier_outputs_and_sessions(rt: FakeRuntime) -> None:
    wf = Workflow(
        [
            Step("draft", SPEC, "write"),
            Step("polish", SPEC, lambda ctx: f"polish: {ctx['draft']}", resume_from="draft"),
            Step("ship", SPEC, "ship"),
        ]
    )
    rt.known.add("s-draft")
    done = anyio.run(lambda: wf.run_step(rt, "polish", outputs={"draft": "DRAFT"}, sessions={"draft": "s-draft"}))
    [call] = rt.calls
    assert (call.step_name, call.prompt, call.resume) == ("polish", "polish: DRAFT", "s-draft")
    assert done.ok and done["polish"] == "answer of polish" and dict(done.sessions) == {"polish": "s-draft"}
    assert list(done.results) == ["polish"]
    assert not (rt.run_dir / "lineage.json").exists(), "run_step leaves lineage to its caller"


def test_run_step_says_which_step_stopped_and_knows_no_other_names(rt: FakeRuntime) -> None:
    rt.plan = lambda call: Outcome(ok=False, error="boom")
    wf = Workflow([Step("a", SPEC, "x"), Step("b", SPEC, "y", on_fail="skip")])
    assert anyio.run(lambda: wf.run_step(rt, "a")).failed_at == "a"
    skipped = anyio.run(lambda: wf.run_step(rt, "b"))
    assert skipped.failed_at is None and skipped["b"] == ""
    with pytest.raises(WorkflowError, match="has no step 'c'"):
        anyio.run(lambda: wf.run_step(rt, "c"))


def test_run_step_of_a_step_its_when_skips_runs_nothing(rt: FakeRuntime) -> None:
    wf = Workflow([Step("a", SPEC, "x", when=lambda ctx: False)])
    done = anyio.run(lambda: wf.run_step(rt, "a"))
    assert rt.calls == [] and done.results == {} and done.failed_at is None
