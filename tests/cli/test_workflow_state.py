"""A workflow run's typed state: the `RunContext` the step callables ask for with ``run``, the `RunResult` a run
returns, and the one-line errors for the underscored ctx keys they replace. Against the engine tests' fake runtime."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from cli.test_workflow_engine import JUDGE, SPEC, FakeRuntime, Outcome, names, run

from flower_cli import Event, RunContext, RunResult, Step, StepAbort, StepResult, Workflow, WorkflowError
from flower_cli.go import GoState
from flower_cli.workflow import RunContext as RunContextFromRoom


@pytest.fixture
def rt(tmp_path: Path) -> FakeRuntime:
    ws = tmp_path / "ws"
    ws.mkdir()
    return FakeRuntime(tmp_path / "runs", ws)


def test_the_types_are_on_both_surfaces() -> None:
    import flower_cli
    import flower_cli.workflow

    assert RunContext is RunContextFromRoom
    for name in ("RunContext", "RunResult"):
        assert name in flower_cli.__all__ and name in flower_cli.workflow.__all__


# --- RunContext: who gets it, what it carries ---------------------------------------------------------------


def test_callables_that_declare_run_get_the_run_and_the_others_do_not(rt: FakeRuntime) -> None:
    got: dict[str, RunContext] = {}
    plain: list[str] = []

    def when(ctx: dict[str, Any], run: RunContext) -> bool:
        got["when"] = run
        return True

    async def gate(result: StepResult, ctx: dict[str, Any], *, run: RunContext) -> bool:  # keyword-only works too
        got["gate"] = run
        return len(got) > 2  # rejects once: on_reject runs

    def on_reject(result: StepResult, ctx: dict[str, Any], run: RunContext) -> str:
        got["on_reject"] = run
        return "again"

    def reduce(result: StepResult, ctx: dict[str, Any], run: RunContext) -> str:
        got["reduce"] = run
        return "reduced"

    def plain_when(ctx: dict[str, Any]) -> bool:
        plain.append("when")
        return True

    events: list[Event] = []
    step = Step("a", SPEC, "x", when=when, gate=gate, on_reject=on_reject, reduce=reduce, retries=1)
    wf = Workflow([step, Step("b", SPEC, "y", when=plain_when)], name="flow", context={"topic": "t"})
    result = run(wf, rt, on_event=events.append)
    assert set(got) == {"when", "gate", "on_reject", "reduce"} and plain == ["when"]
    assert len({id(r) for r in got.values()}) == 1, "one RunContext for the whole run"
    ctx = got["when"]
    assert ctx.runtime is rt and ctx.workflow == "flow" and ctx.on_event == events.append and ctx.woke == 1
    assert ctx.lineage is not None and ctx.channel is None and ctx.workbench is None
    assert result["a"] == "reduced" and "run" not in result.context and set(result.context) == {"topic", "a", "b"}


def test_a_callable_without_a_signature_is_called_with_ctx_alone(rt: FakeRuntime) -> None:
    result = run(Workflow([Step("a", SPEC, "x", when=bool)], context={"k": 1}, continuous=False), rt)
    assert names(rt) == ["a"] and result.ok


def test_emit_reaches_the_sink_and_is_quiet_without_one(rt: FakeRuntime) -> None:
    events: list[Event] = []
    RunContext(rt, on_event=events.append).emit(Event("notice", "hello"))
    RunContext(rt).emit(Event("notice", "nobody listens"))
    assert [e.text for e in events] == ["hello"]


def test_a_side_session_runs_on_the_sink_counts_in_the_cost_and_stays_out_of_lineage(rt: FakeRuntime) -> None:
    import json

    rt.plan = lambda call: Outcome()
    costs = {"work": 0.5, "work·judge#1": 0.25}
    original = rt.run

    async def priced(*args: Any, **kw: Any) -> StepResult:
        result = await original(*args, **kw)
        result.cost_usd = costs[result.step]
        return result

    rt.run = priced  # type: ignore[method-assign]
    seen: list[Any] = []

    async def gate(result: StepResult, ctx: dict[str, Any], run: RunContext) -> bool:
        verdict = await run.side_session(JUDGE, f"judge: {result.text}", step_name="work·judge#1")
        seen.append(verdict)
        return verdict.ok

    events: list[Event] = []
    result = run(Workflow([Step("work", SPEC, "x", gate=gate)]), rt, on_event=events.append)
    assert names(rt) == ["work", "work·judge#1"] and rt.calls[1].spec is JUDGE and seen[0].step == "work·judge#1"
    assert [a.step for a in result.attempts] == ["work", "work·judge#1"] and result.cost_usd == 0.75
    assert set(result.results) == {"work"}, "a side session is not a step"
    assert json.loads((rt.run_dir / "lineage.json").read_text())["steps"] == {"work": "s1"}


# --- RunResult ----------------------------------------------------------------------------------------------


def test_the_answer_is_the_stopped_step_or_the_last_that_ran(rt: FakeRuntime) -> None:
    rt.plan = lambda call: Outcome(ok=call.step_name != "b")
    stopped = run(Workflow([Step("a", SPEC, "x"), Step("b", SPEC, "y"), Step("c", SPEC, "z")], continuous=False), rt)
    assert not stopped.ok and stopped.failed_at == "b" and stopped.answer is stopped.results["b"]
    assert list(stopped.results) == ["a", "b"] and stopped.aborted is None
    went_on = run(Workflow([Step("a", SPEC, "x"), Step("b", SPEC, "y", on_fail="skip")], continuous=False), rt)
    assert went_on.ok and went_on.answer is went_on.results["b"] and went_on["b"] == ""
    assert RunResult({}).answer is None and RunResult({}).cost_usd == 0


def test_retries_and_rounds_are_attempts_and_the_last_one_is_the_result(rt: FakeRuntime) -> None:
    outcomes = iter([Outcome(ok=False, error="boom"), Outcome(), Outcome()])
    rt.plan = lambda call: next(outcomes)
    verdicts = iter([False, True])
    step = Step("w", SPEC, "x", gate=lambda r, c: next(verdicts), on_reject=lambda r, c: "more", retries=2)
    result = run(Workflow([step], continuous=False), rt)
    assert [a.step for a in result.attempts] == ["w", "w#retry1", "w#round2"]
    assert result.results["w"].step == "w#round2" and result["w"] == "answer of w#round2"


def test_an_abort_is_the_reason_and_the_aborted_steps_result(rt: FakeRuntime) -> None:
    def when(ctx: dict[str, Any]) -> bool:
        raise StepAbort("no brief")

    result = run(Workflow([Step("a", SPEC, "x", when=when)], continuous=False), rt)
    assert result.failed_at == "a" and result.aborted == "no brief"
    assert result.answer is not None and result.answer.error == "no brief" and not result.answer.ok
    assert result.attempts == (), "nothing ran"


def test_the_result_reads_as_the_ctx_and_the_old_keys_say_where_they_went(rt: FakeRuntime) -> None:
    rt.plan = lambda call: Outcome(ok=False, error="boom")
    result = run(Workflow([Step("a", SPEC, "x")], context={"topic": "t"}, continuous=False), rt)
    assert result["topic"] == "t" and dict(result) == {"topic": "t"} and len(result) == 1
    assert result.get("missing") is None and "missing" not in result
    with pytest.raises(KeyError):
        result["missing"]
    # A stale check must not pass quietly: `.get` and `in` raise too, with the replacement named.
    for read in (lambda: result["_failed_at"], lambda: result.get("_failed_at"), lambda: "_failed_at" in result):
        with pytest.raises(WorkflowError, match=r"ctx\['_failed_at'\] is gone: .*RunResult: use its \.failed_at"):
            read()


@pytest.mark.parametrize(
    ("key", "replacement"),
    [("_runtime", "run.runtime"), ("_on_event", "run.emit"), ("_woke", "run.woke"), ("_results", ".results")],
)
def test_an_old_key_in_a_gate_is_a_one_line_error_naming_its_replacement(
    rt: FakeRuntime, key: str, replacement: str
) -> None:
    def gate(result: StepResult, ctx: dict[str, Any]) -> bool:
        return bool(ctx[key])

    with pytest.raises(WorkflowError) as caught:
        run(Workflow([Step("check", SPEC, "x", gate=gate)], continuous=False), rt)
    message = str(caught.value)
    assert f"step 'check': its gate raised KeyError: '{key}'" in message and replacement in message
    assert "parameter named `run`" in message or "RunResult" in message
    assert "\n" not in message and "another step did not write" not in message


def test_the_context_holds_no_engine_state_after_a_run(rt: FakeRuntime) -> None:
    wf = Workflow([Step("a", SPEC, "x")], context={"topic": "t"})
    run(wf, rt)
    assert wf.context == {"topic": "t", "a": "answer of a"}


# --- the go flow's state ------------------------------------------------------------------------------------


def test_go_state_clears_to_a_new_runs_state() -> None:
    state = GoState(brief_missing=("Goal",), rounds_judged=3, accepted="yes", judge_failed=StepResult(step="j"))
    state.clear()
    assert state == GoState()
