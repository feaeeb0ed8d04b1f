"""The ``go`` path as a `Workflow`: clarify → goal → work, every work round checked by a fresh judge.

Three steps, named as they appear in ``manifest.json`` and ``lineage.json``:

- ``clarify``: the clarifier asks the person what changes the approach and writes the four-part brief,
  frozen in ``notes/brief.md``. Skipped when the brief on disk is complete (a wake).
- ``goal``: a judge (mode A) turns the brief into a statement and a checklist, frozen in ``notes/goal.md``;
  checks it cannot verify here are marked and the person is warned. Skipped when the goal on disk is
  complete, unless the brief was just amended on wake (then the goal is derived again).
- ``work``: the coordinator works from the brief and the goal. After each round a **fresh** judge session
  (``work·judge#N``) checks the scene against the goal: achieved → done; not yet → the same work session
  continues with the judge's gaps (``work#round2`` …, ``rounds`` in all); unreachable → the person is asked
  to accept, change the goal, or overrule the judge; nobody answering stops the run with the reason.

The parsers (`Brief`, `Goal`, `Verdict`) read English and Chinese headings (see docs/compatibility.md).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..runtime import Event
from ..workflow import Ctx, Step, StepAbort, Workflow
from ._brief import Brief
from ._continuity import NotesPaths
from ._goal import Goal
from ._verdict import UNREACHABLE_OPTIONS, Verdict, unreachable_choice, unreachable_question

if TYPE_CHECKING:
    from flower_workbench import Workbench

    from ..runtime import StepResult
    from ._human import HumanChannel

__all__ = [
    "CLARIFY",
    "GOAL",
    "WORK",
    "GoSettings",
    "build_go_flow",
    "go_workbench",
    "judge_label",
]

CLARIFY, GOAL, WORK = "clarify", "goal", "work"

WORKER_PROMPT = "You implement. Verify after every change (run it, test it) instead of saving the checks for the end."
_CLARIFY_RESUME = (
    "Your clarification was cut off before it finished (the process stopped; why does not matter). Carry on "
    "from where you were: do not ask again what was already answered, find out or decide what is still open, "
    "then output the complete brief in its four sections."
)
_WAKE_DEFAULT = "Carry on from where you stopped. First say in one sentence what you will do next."


def judge_label(step: str, round_no: int) -> str:
    """The manifest name of a round's judge: ``work·judge#1``."""
    return f"{step}·judge#{round_no}"


@dataclass(frozen=True)
class GoSettings:
    """What ``flower go`` was asked to do (the command's options, checked)."""

    ask: str = ""
    rounds: int = 3
    goal: bool = True
    judge_can_run: bool = False
    clarify_only: bool = False
    isolate: bool = False
    instructions: str = ""
    amended: bool = False  # the ask was appended to an existing brief on wake: derive the goal again


def go_workbench(workspace: Path | str, *, isolate: bool = False) -> Workbench:
    """Where ``go`` keeps its notes: ``<workspace>/.flower``, or beside the workspace when workers get their
    own git worktrees (the workbench is what they share, so it cannot live inside any one of them)."""
    import flower_workbench

    wb = flower_workbench.Workbench.beside(workspace) if isolate else flower_workbench.Workbench(Path(workspace))
    return wb.ensure()


def _emit(ctx: Ctx, event: Event) -> None:
    sink = ctx.get("_on_event")
    if sink is not None:
        sink(event)


def build_go_flow(settings: GoSettings, *, channel: HumanChannel, workbench: Workbench) -> Workflow:
    """The workflow ``flower go`` runs (it also serves a program that wants the same path)."""
    from ..roles import clarify, coordinator, judge, worker

    paths = NotesPaths.of(workbench.notes)
    steps = [_clarify_step(settings, channel, paths, clarify)]
    if not settings.clarify_only:
        if settings.goal:
            steps.append(_goal_step(settings, channel, paths, judge))
        team = {
            "coder": worker(
                "Writes code and tests: send it every piece of hands-on implementation.",
                WORKER_PROMPT,
                isolate=settings.isolate,
            )
        }
        lead = coordinator("coordinator", settings.instructions, team, channel=channel)
        work = Step(WORK, lead, _work_prompt(settings), resume_prompt=_wake_prompt(settings))
        if settings.goal:
            work = _with_judge(work, settings, channel, paths, judge("judge", channel, can_run=settings.judge_can_run))
        steps.append(work)
    return Workflow(steps, name="go", channel=channel, workbench=workbench)


# --- clarify ------------------------------------------------------------------------------------------


def _clarify_step(settings: GoSettings, channel: HumanChannel, paths: NotesPaths, clarify: Any) -> Step:
    def when(ctx: Ctx) -> bool:
        on_disk = Brief.load(paths.brief)
        if on_disk.complete:
            ctx["_brief"] = on_disk
            ctx[CLARIFY] = on_disk.prompt_block()
            return False
        return True

    def gate(result: StepResult, ctx: Ctx) -> bool:
        brief = Brief.parse(result.text)
        if not brief.complete:
            ctx["_brief_missing"] = brief.missing()
            return False
        ctx["_brief"] = brief.write(paths.brief)
        ctx.pop("_brief_missing", None)
        return True

    def on_reject(result: StepResult, ctx: Ctx) -> str:
        missing = ", ".join(ctx.get("_brief_missing") or []) or "some sections"
        return (
            f"The brief is not complete: {missing} is missing or empty. Output the whole brief again, all four "
            "sections as `## ` headings (Goal, Acceptance criteria, Boundaries, Unknowns and assumptions), none "
            "empty; where you do not know, write down the assumption you make."
        )

    def reduce(result: StepResult, ctx: Ctx) -> str:
        brief: Brief = ctx["_brief"]
        return brief.prompt_block()

    prompt = (
        f"The request:\n\n{settings.ask.strip() or '(no request text; look at the workspace)'}\n\n"
        "Clarify it: find out what you can by reading the workspace, ask the person only what changes the "
        "approach, then output the brief."
    )
    resume = _CLARIFY_RESUME + (
        f"\n\nThe person said this when the run was started again:\n\n{settings.ask.strip()}"
        if settings.ask.strip()
        else ""
    )
    return Step(
        CLARIFY,
        clarify("clarifier", channel),
        prompt,
        when=when,
        gate=gate,
        reduce=reduce,
        on_reject=on_reject,
        retries=2,
        resume_prompt=resume,
    )


# --- goal ---------------------------------------------------------------------------------------------


def _goal_step(settings: GoSettings, channel: HumanChannel, paths: NotesPaths, judge: Any) -> Step:
    def when(ctx: Ctx) -> bool:
        on_disk = Goal.load(paths.goal)
        if on_disk.complete and not settings.amended:
            ctx["_goal"] = on_disk
            ctx[GOAL] = on_disk.prompt_block()
            return False
        return True

    def brief_block(ctx: Ctx) -> str:
        brief = ctx.get("_brief")
        return brief.prompt_block() if isinstance(brief, Brief) else str(ctx.get(CLARIFY) or "(no brief)")

    def prompt(ctx: Ctx) -> str:
        return (
            "Mode A: set the goal. Turn this brief into a goal an independent judge can check in this environment "
            "(look at the environment first). Output the two sections, Goal and Checks.\n\n"
            f"{brief_block(ctx)}"
        )

    def resume_prompt(ctx: Ctx) -> str:
        return (
            "The brief has changed since you set the goal (see the additions at its end). Set the goal again, "
            "in full (Goal and Checks), from the brief as it is now:\n\n"
            f"{brief_block(ctx)}"
        )

    def gate(result: StepResult, ctx: Ctx) -> bool:
        goal = Goal.parse(result.text)
        if not goal.complete:
            return False
        goal.write(paths.goal)
        ctx["_goal"] = goal
        warning = goal.unverifiable_warning(paths.goal)
        if warning:
            _emit(
                ctx,
                Event(
                    "notice",
                    warning,
                    payload={
                        "unverifiable": len(goal.unverifiable()),
                        "total": len(goal.checks),
                        "path": str(paths.goal),
                    },
                ),
            )
        return True

    def on_reject(result: StepResult, ctx: Ctx) -> str:
        return (
            "The goal is not complete: it needs a `## Goal` statement and a `## Checks` list with at least one "
            "check. Output both sections again."
        )

    def reduce(result: StepResult, ctx: Ctx) -> str:
        goal: Goal = ctx["_goal"]
        return goal.prompt_block()

    return Step(
        GOAL,
        judge("goal-setter", channel, can_run=settings.judge_can_run),
        prompt,
        when=when,
        gate=gate,
        reduce=reduce,
        on_reject=on_reject,
        retries=1,
        resume_prompt=resume_prompt,
    )


# --- work ---------------------------------------------------------------------------------------------


def _goal_of(ctx: Ctx) -> Goal | None:
    goal = ctx.get("_goal")
    return goal if isinstance(goal, Goal) and goal.complete else None


def _work_prompt(settings: GoSettings) -> Any:
    def prompt(ctx: Ctx) -> str:
        brief = ctx.get("_brief")
        text = "Build this, as the brief says:\n\n" + (
            brief.prompt_block() if isinstance(brief, Brief) else str(ctx.get(CLARIFY, ""))
        )
        goal = _goal_of(ctx)
        if settings.goal and goal is not None:
            text += (
                "\n\n---\n\nWhen you are done, an independent judge checks the result against this goal, check by "
                f"check:\n\n{goal.prompt_block()}"
            )
        return text

    return prompt


def _wake_prompt(settings: GoSettings) -> Any:
    def prompt(ctx: Ctx) -> str:
        said = settings.ask.strip()
        text = (
            f"The person picked the run up again and said (it is also appended to the brief):\n\n{said}\n\n{_WAKE_DEFAULT}"
            if said and settings.amended
            else _WAKE_DEFAULT
        )
        goal = _goal_of(ctx)
        if settings.amended and settings.goal and goal is not None:
            text += f"\n\n---\n\nThe goal was derived again from the amended brief; this one counts now:\n\n{goal.prompt_block()}"
        return text

    return prompt


def _judge_prompt(goal: Goal | None, answer: str) -> str:
    return (
        "Mode B: judge a round. The goal:\n\n"
        f"{goal.prompt_block() if goal is not None else '(no goal)'}\n\n---\n\n"
        "What the worker said at the end of this round:\n\n"
        f"{answer.strip() or '(nothing)'}\n\n---\n\n"
        "Check the scene yourself (the workspace, the files, what runs); the worker's words are not evidence. "
        "Output the three sections: Verdict, Reason, Failed checks."
    )


def _nobody(reason: str, paths: NotesPaths, ctx: Ctx) -> str:
    runtime = ctx.get("_runtime")
    manifest = Path(getattr(runtime, "run_dir", "runs")) / "manifest.json"
    return (
        f"the judge says the goal is unreachable ({reason.strip() or 'no reason given'}) and nobody answered; "
        f"look at {paths.goal} and {manifest}"
    )


def _with_judge(step: Step, settings: GoSettings, channel: HumanChannel, paths: NotesPaths, spec: Any) -> Step:
    """``step`` with a judge after every round: ``rounds`` in all, the gaps fed back to the same session."""

    async def gate(result: StepResult, ctx: Ctx) -> bool:
        runtime = ctx.get("_runtime")
        if runtime is None:
            raise StepAbort("no runtime in ctx['_runtime']: the goal cannot be judged")
        round_no = int(ctx.get("_goal_rounds", 0)) + 1
        ctx["_goal_rounds"] = round_no
        goal = _goal_of(ctx) or Goal.load(paths.goal)
        judged = await runtime.run(
            spec,
            _judge_prompt(goal if goal.complete else None, result.text),
            step_name=judge_label(step.name, round_no),
            on_event=ctx.get("_on_event"),
        )
        if not judged.ok:
            ctx["_judge_failed"] = judged
            raise StepAbort(f"the judge could not run: {judged.error or 'no result'}")
        verdict = Verdict.parse(judged.text)
        ctx["_verdict"] = verdict
        if verdict.achieved:
            return True
        if not verdict.unreachable:
            return False
        return await _ask_about_unreachable(verdict, ctx)

    async def _ask_about_unreachable(verdict: Verdict, ctx: Ctx) -> bool:
        answer = await _ask(channel, unreachable_question(verdict.reason), UNREACHABLE_OPTIONS)
        if answer is None:
            raise StepAbort(_nobody(verdict.reason, paths, ctx))
        choice = unreachable_choice(answer)
        if choice == "accept":
            ctx["_accepted"] = answer
            return True
        if choice == "change":
            change = await _ask(channel, "What is the new goal? One sentence; it is added to the current goal.", ())
            if not change:
                raise StepAbort(_nobody(verdict.reason, paths, ctx))
            goal = (_goal_of(ctx) or Goal.load(paths.goal)).amend(change)
            goal.write(paths.goal)
            ctx["_goal"] = goal
            ctx["_verdict"] = Verdict("not_yet", f"The person changed the goal. The new goal: {change}", verdict.failed)
            return False
        ctx["_verdict"] = Verdict(
            "not_yet",
            f"The person says the goal can be reached and the judge is wrong. They said: {answer}",
            verdict.failed,
        )
        return False

    def on_reject(result: StepResult, ctx: Ctx) -> str:
        verdict = ctx.get("_verdict")
        return verdict.feedback() if isinstance(verdict, Verdict) else ""

    return replace(step, gate=gate, on_reject=on_reject, retries=max(0, settings.rounds - 1))


async def _ask(channel: HumanChannel, question: str, options: tuple[str, ...] | list[str]) -> str | None:
    """Ask through the channel; the answer, or None when nobody answered (timeout, declined, over quota)."""
    before = len(channel.asks)
    await channel.ask(question, list(options))
    item = channel.asks[before] if len(channel.asks) > before else None
    if item is None or item.state != "answered":
        return None
    return item.answer
