"""``Workflow(workbench=...)`` is the workbench the steps run with: `Workflow.run` gives it to the runtime for the
run (`Runtime.use_workbench`) and gives the runtime its own back after. A real Runtime whose model call is
replaced by a probe that looks at what the step would run with, and the engine tests' fake runtime."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from cli.test_workflow_engine import SPEC, FakeRuntime, Outcome

import flower_resilience
import flower_stores
from flower_cli import AgentSpec, RunContext, Runtime, Step, StepResult, Workflow, WorkflowError
from flower_workbench import Workbench


@pytest.fixture(autouse=True)
def credential(isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0000000000000000")


@dataclass
class Seen:
    """What a step would have run with, looked at when the Runtime is asked to run it."""

    workbench: Path | None
    first_message: str
    post_hooks: int
    spill_dirname: str
    resume_prompt: str


def probe(rt: Runtime) -> list[Seen]:
    seen: list[Seen] = []

    async def run(spec: AgentSpec, prompt: str, **kw: Any) -> StepResult:
        hooks = rt._launcher().hooks(spec)
        seen.append(
            Seen(
                rt.workbench.root if rt.workbench is not None else None,
                rt._launcher().first_prompt(spec, prompt, kw.get("resume")),
                len(hooks.get("PostToolUse", [])),
                rt.store.policy.spill_dirname,  # type: ignore[attr-defined]
                rt.resilience.resume_prompt,
            )
        )
        return StepResult(step=kw.get("step_name") or spec.name, ok=True, text="done", session_id="sid")

    rt.run = run  # type: ignore[method-assign]
    return seen


def test_the_workflows_workbench_is_the_one_its_steps_run_with(workspace: Path, tmp_path: Path) -> None:
    wb = Workbench.beside(workspace).ensure()
    wb.notes.joinpath("plan.md").write_text("# the plan\n")
    with Runtime(workspace, tmp_path / "runs", trim=True) as rt:
        bare = (rt.store.policy.spill_dirname, rt.resilience.resume_prompt)  # type: ignore[attr-defined]
        seen = probe(rt)
        ran: list[RunContext] = []

        def gate(result: StepResult, ctx: dict[str, Any], run: RunContext) -> bool:
            ran.append(run)
            return True

        result = anyio.run(lambda: Workflow([Step("a", SPEC, "do it", gate=gate)], workbench=wb).run(rt))
        assert result.ok and ran[0].workbench is not None and ran[0].workbench.root == wb.root
        [step] = seen
        assert step.workbench == wb.root
        assert "plan.md" in step.first_message and step.first_message.endswith("do it"), "the index is in it"
        assert step.post_hooks == 2, "the index guard and the spill guard"
        assert step.spill_dirname == str(wb.spill) and str(wb.root) in step.resume_prompt
        # ...and after the run the runtime is what it was
        assert rt.workbench is None and (rt.store.policy.spill_dirname, rt.resilience.resume_prompt) == bare  # type: ignore[attr-defined]


def test_true_gives_a_runtime_without_one_the_default_and_leaves_one_that_has_one(workspace: Path) -> None:
    with Runtime(workspace, workspace / "runs") as rt:
        seen = probe(rt)
        anyio.run(lambda: Workflow([Step("a", SPEC, "x")], workbench=True, continuous=False).run(rt))
        assert seen[0].workbench == workspace / "runs" / "workbench" and rt.workbench is None
    own = Workbench(workspace).ensure()
    with Runtime(workspace, workspace / "runs", workbench=own) as rt:
        seen = probe(rt)
        anyio.run(lambda: Workflow([Step("a", SPEC, "x")], workbench=True, continuous=False).run(rt))
        assert seen[0].workbench == own.root and rt.workbench is own


def test_without_one_the_runtimes_own_stays(workspace: Path) -> None:
    own = Workbench(workspace).ensure()
    with Runtime(workspace, workspace / "runs", workbench=own) as rt:
        seen = probe(rt)
        anyio.run(lambda: Workflow([Step("a", SPEC, "x")], continuous=False).run(rt))
        assert seen[0].workbench == own.root


def test_use_workbench_leaves_what_the_caller_chose(workspace: Path) -> None:
    chosen = flower_resilience.Resilience(resume_prompt="Carry on, please.")
    policy = flower_stores.TrimPolicy(enabled=True, spill_dirname="my/spill")
    with Runtime(workspace, workspace / "runs", resilience=chosen, trim=policy) as rt:
        rt.use_workbench(True)
        assert rt.workbench is not None and rt.resilience.resume_prompt == "Carry on, please."
        assert rt.store.policy is policy  # type: ignore[attr-defined]
        rt.use_workbench(False)
        assert rt.workbench is None


# --- against a runner that is not a Runtime ---------------------------------------------------------------


@dataclass
class Lending(FakeRuntime):
    workbench: Any = None
    lent: list[Any] = field(default_factory=list)

    def use_workbench(self, workbench: Any) -> None:
        self.lent.append(workbench)
        self.workbench = workbench if workbench is not False else None


def test_the_runner_gets_the_workbench_before_the_first_step_and_its_own_back_after(tmp_path: Path) -> None:
    wb = Workbench(tmp_path / "ws")
    rt = Lending(tmp_path / "runs", tmp_path / "ws")
    during: list[Any] = []

    def plan(call: Any) -> Outcome:
        during.append(rt.workbench)
        return Outcome()

    rt.plan = plan
    anyio.run(lambda: Workflow([Step("a", SPEC, "x"), Step("b", SPEC, "y")], workbench=wb).run(rt))
    assert rt.lent == [wb, False] and during == [wb, wb] and rt.workbench is None
    rt.workbench, rt.lent = Workbench(tmp_path / "ws"), []  # the same place: nothing to lend
    anyio.run(lambda: Workflow([Step("a", SPEC, "x")], workbench=wb).run(rt))
    assert rt.lent == []


def test_a_runner_that_cannot_take_the_workbench_is_an_error_before_anything_runs(tmp_path: Path) -> None:
    rt = FakeRuntime(tmp_path / "runs", tmp_path / "ws")
    with pytest.raises(WorkflowError, match=r"workflow 'w' brings a workbench, but its runtime \(FakeRuntime\)"):
        anyio.run(lambda: Workflow([Step("a", SPEC, "x")], name="w", workbench=True).run(rt))
    assert rt.calls == []


def test_a_workbench_that_is_not_one_is_a_workflow_error() -> None:
    with pytest.raises(WorkflowError, match="workbench must be a flower_workbench.Workbench, True, False or None"):
        Workflow([Step("a", SPEC, "x")], workbench=".flower")  # type: ignore[arg-type]
