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

What the flow learns on the way (the brief, the goal, the judge's last verdict, an accepted "unreachable")
is a typed `GoState` on the `GoFlow`, renewed on every run; the command reads it to say how the run ended.
The parsers (`Brief`, `Goal`, `Verdict`) read English and the original's Chinese headings.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flower_workbench import Workbench

from ..roles import clarify, coordinator, judge, worker
from ..runtime import Event
from ..workflow import Ctx, RunContext, RunResult, Step, StepAbort, StepRunner, Workflow, WorkflowError
from ._brief import Brief
from ._continuity import NotesPaths
from ._goal import Goal
from ._settings import GoSettings
from ._verdict import UNREACHABLE_OPTIONS, Verdict, unreachable_choice, unreachable_question

if TYPE_CHECKING:
    from ..runtime import StepResult
    from ._human import HumanChannel

__all__ = [
    "CLARIFY",
    "GOAL",
    "WORK",
    "GoFlow",
    "GoState",
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


def go_workbench(workspace: Path | str, *, isolate: bool = False, create: bool = True) -> Workbench:
    """Where ``go`` keeps its notes: ``<workspace>/.flower``, or beside the workspace when workers get their
    own git worktrees (the workbench is what they share, so it cannot live inside any one of them).
    ``create=False``: its folders are not made yet (a caller that may still refuse to run makes them later)."""
    wb = Workbench.beside(workspace) if isolate else Workbench(Path(workspace))
    return wb.ensure() if create else wb


@dataclass
class GoState:
    """What a run of the go flow learned: the frozen brief and goal as read or written, what the last brief
    lacked, how many rounds were judged, the judge's last verdict, the person's answer when they accepted an
    "unreachable" verdict, and the judge session that could not run (its error decides the exit code)."""

    brief: Brief | None = None
    brief_missing: tuple[str, ...] = ()
    goal: Goal | None = None
    rounds_judged: int = 0
    verdict: Verdict | None = None
    accepted: str | None = None
    judge_failed: StepResult | None = None
    produced_nothing: str | None = None  # the step (clarify, goal) that ran to its end with nothing usable

    def clear(self) -> None:
        """Back to a new run's state (every field's default)."""
        for f in fields(self):
            setattr(self, f.name, f.default)


@dataclass
class GoFlow(Workflow):
    """The go path's `Workflow`, with the `GoState` its steps keep (renewed when a run starts)."""

    state: GoState = field(default_factory=GoState)

    async def run(
        self,
        runtime: StepRunner,
        *,
        on_event: Callable[[Event], Any] | None = None,
        on_step: Callable[[Step, StepResult], Any] | None = None,
    ) -> RunResult:
        self.state.clear()
        outcome = await super().run(runtime, on_event=on_event, on_step=on_step)
        return _said_why_nothing(outcome, self.state, runtime)

    async def run_phase(
        self,
        runtime: StepRunner,
        phase: str,
        *,
        outputs: Mapping[str, Any] | None = None,
        round_no: int = 1,
        work_session: str | None = None,
        feedback: str = "",
        on_event: Callable[[Event], Any] | None = None,
    ) -> RunResult:
        """Run ONE phase of the go path, as `run` would after the phases before it — the seam for a runner that
        puts each phase somewhere else (flower-fleet runs each as its own durable task).

        ``phase`` is ``clarify``, ``goal`` or ``work``; ``outputs`` what the earlier phases left in ctx. For
        ``work``, ``round_no`` is the judged round to run (one round: the coordinator, then its judge): round 1
        starts the work session; a later round continues ``work_session`` (the first round's session) with
        ``feedback`` (the last verdict's `Verdict.feedback`), under the label ``work#round<N>``. The brief and
        the goal are read from the notes, as a wake reads them; `state` holds what the phase learned (the
        verdict: achieved, not yet, unreachable and accepted). Raises `WorkflowError` for an unknown phase.
        """
        self.state.clear()
        self._load_notes()
        if phase != WORK:
            outcome = await self.run_step(runtime, phase, outputs=outputs, on_event=on_event)
            return _said_why_nothing(outcome, self.state, runtime)
        work = next((s for s in self.steps if s.name == WORK), None)
        if work is None:
            raise WorkflowError("this go flow has no work phase (clarify only)")
        if round_no < 1 or (round_no > 1 and not (work_session and feedback.strip())):
            raise WorkflowError("a work round after the first needs round_no >= 2, the work session and feedback")
        # One round: no retries here (the caller runs the next round); the gate judges it as round_no.
        self.state.rounds_judged = round_no - 1
        one = replace(work, retries=0)
        sessions: dict[str, str] = {}
        if round_no > 1:
            label = f"{WORK}#round{round_no}"
            one = replace(one, name=label, prompt=feedback, resume_prompt=feedback)
            sessions[label] = str(work_session)
        single = Workflow([one], name=self.name, channel=self.channel, workbench=self.workbench)
        return await single.run_step(runtime, one.name, outputs=outputs, sessions=sessions, on_event=on_event)

    def _load_notes(self) -> None:
        wb = self.workbench
        if wb is None or isinstance(wb, bool):
            return
        paths = NotesPaths.of(wb.notes)
        brief, goal = Brief.load(paths.brief), Goal.load(paths.goal)
        self.state.brief = brief if brief.complete else None
        self.state.goal = goal if goal.complete else None


def _said_why_nothing(outcome: RunResult, state: GoState, runtime: StepRunner) -> RunResult:
    """A clarify or goal step that ran to its end without a usable brief/goal: its row says why (not "ok").

    The gate only rejected the answer, so the session itself looked fine; left so, the run would end with
    "no result" and a manifest of ok rows. The last attempt's row gets the reason (what the brief or goal
    lacks, the model's last words, shortened, where to look) and the run's ``aborted`` carries it to the
    closing line.
    """
    step = outcome.failed_at
    answer = outcome.answer
    if step not in (CLARIFY, GOAL) or outcome.aborted or answer is None or not answer.ok:
        return outcome
    tries = sum(1 for r in outcome.attempts if r.step == step or r.step.startswith(f"{step}#"))
    reason = why_nothing(step, answer, tries=tries, missing=state.brief_missing, run_dir=Path(runtime.run_dir))
    answer.ok, answer.error = False, reason
    record = getattr(runtime, "record", None)
    if callable(record):
        record()
    state.produced_nothing = step
    return replace(outcome, aborted=reason)


def why_nothing(step: str, result: StepResult, *, tries: int, missing: tuple[str, ...], run_dir: Path) -> str:
    """One line: which part gave nothing usable, what it lacks, its last words, where to look."""
    if step == CLARIFY:
        lacks = list(missing) or Brief.parse(result.text).missing()
        what = f"the clarifier gave no usable brief ({', '.join(lacks) or 'its sections'} missing or empty)"
    else:
        goal = Goal.parse(result.text)
        parts = [
            p
            for p, absent in (("a Goal statement", not goal.statement.strip()), ("a Checks list", not goal.checks))
            if absent
        ]
        what = f"the goal-setter gave no usable goal (it lacks {' and '.join(parts) or 'a Goal and its Checks'})"
    words = " ".join(result.text.split())
    said = f'its last words: "{words[:157] + "…" if len(words) > 160 else words}"' if words else "it said nothing"
    times = f"{tries} tr{'y' if tries == 1 else 'ies'}"
    session = f" and the session (flower sessions show {result.session_id})" if result.session_id else ""
    return f"{what} in {times}; {said}; look at {run_dir / 'manifest.json'}{session}"


def build_go_flow(settings: GoSettings, *, channel: HumanChannel, workbench: Workbench) -> GoFlow:
    """The workflow ``flower go`` runs (it also serves a program that wants the same path)."""
    paths = NotesPaths.of(workbench.notes)
    state = GoState()
    steps = [_clarify_step(settings, channel, paths, state)]
    if not settings.clarify_only:
        if settings.goal:
            steps.append(_goal_step(settings, channel, paths, state))
        team = {
            "coder": worker(
                "Writes code and tests: send it every piece of hands-on implementation.",
                WORKER_PROMPT,
                isolate=settings.isolate,
            )
        }
        lead = coordinator("coordinator", settings.instructions, team, channel=channel)
        work = Step(WORK, lead, _work_prompt(settings, state), resume_prompt=_wake_prompt(settings, state))
        if settings.goal:
            work = _with_judge(
                work, settings, channel, paths, judge("judge", channel, can_run=settings.judge_can_run), state
            )
        steps.append(work)
    return GoFlow(steps, name="go", channel=channel, workbench=workbench, state=state)


# --- clarify ------------------------------------------------------------------------------------------


def _clarify_step(settings: GoSettings, channel: HumanChannel, paths: NotesPaths, state: GoState) -> Step:
    def when(ctx: Ctx) -> bool:
        on_disk = Brief.load(paths.brief)
        if on_disk.complete:
            state.brief = on_disk
            ctx[CLARIFY] = on_disk.prompt_block()
            return False
        return True

    def gate(result: StepResult, ctx: Ctx) -> bool:
        brief = Brief.parse(result.text)
        if not brief.complete:
            state.brief_missing = tuple(brief.missing())
            return False
        state.brief = brief.write(paths.brief)
        state.brief_missing = ()
        return True

    def on_reject(result: StepResult, ctx: Ctx) -> str:
        missing = ", ".join(state.brief_missing) or "some sections"
        return (
            f"The brief is not complete: {missing} is missing or empty. Output the whole brief again, all four "
            "sections as `## ` headings (Goal, Acceptance criteria, Boundaries, Unknowns and assumptions), none "
            "empty; where you do not know, write down the assumption you make."
        )

    def reduce(result: StepResult, ctx: Ctx) -> str:
        assert state.brief is not None  # the gate passed: it wrote the brief
        return state.brief.prompt_block()

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
        fresh_after_carried=True,  # a resumed clarification that still yields no brief is started over once
    )


# --- goal ---------------------------------------------------------------------------------------------


def _goal_step(settings: GoSettings, channel: HumanChannel, paths: NotesPaths, state: GoState) -> Step:
    def when(ctx: Ctx) -> bool:
        on_disk = Goal.load(paths.goal)
        if on_disk.complete and not settings.amended:
            state.goal = on_disk
            ctx[GOAL] = on_disk.prompt_block()
            return False
        return True

    def brief_block(ctx: Ctx) -> str:
        brief = state.brief
        return brief.prompt_block() if brief is not None else str(ctx.get(CLARIFY) or "(no brief)")

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

    def gate(result: StepResult, ctx: Ctx, run: RunContext) -> bool:
        goal = Goal.parse(result.text)
        if not goal.complete:
            return False
        goal.write(paths.goal)
        state.goal = goal
        warning = goal.unverifiable_warning(paths.goal)
        if warning:
            run.emit(
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
        assert state.goal is not None  # the gate passed: it wrote the goal
        return state.goal.prompt_block()

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
        fresh_after_carried=True,  # likewise a resumed goal-setter
    )


# --- work ---------------------------------------------------------------------------------------------


def _goal_of(state: GoState) -> Goal | None:
    goal = state.goal
    return goal if goal is not None and goal.complete else None


def _work_prompt(settings: GoSettings, state: GoState) -> Any:
    def prompt(ctx: Ctx) -> str:
        brief = state.brief
        text = "Build this, as the brief says:\n\n" + (
            brief.prompt_block() if brief is not None else str(ctx.get(CLARIFY, ""))
        )
        goal = _goal_of(state)
        if settings.goal and goal is not None:
            text += (
                "\n\n---\n\nWhen you are done, an independent judge checks the result against this goal, check by "
                f"check:\n\n{goal.prompt_block()}"
            )
        return text

    return prompt


def _wake_prompt(settings: GoSettings, state: GoState) -> Any:
    def prompt(ctx: Ctx) -> str:
        said = settings.ask.strip()
        text = (
            f"The person picked the run up again and said (it is also appended to the brief):\n\n{said}\n\n{_WAKE_DEFAULT}"
            if said and settings.amended
            else _WAKE_DEFAULT
        )
        goal = _goal_of(state)
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


def _nobody(reason: str, paths: NotesPaths, run: RunContext) -> str:
    manifest = Path(run.runtime.run_dir) / "manifest.json"
    return (
        f"the judge says the goal is unreachable ({reason.strip() or 'no reason given'}) and nobody answered; "
        f"look at {paths.goal} and {manifest}"
    )


def _with_judge(
    step: Step, settings: GoSettings, channel: HumanChannel, paths: NotesPaths, spec: Any, state: GoState
) -> Step:
    """``step`` with a judge after every round: ``rounds`` in all, the gaps fed back to the same session."""

    async def gate(result: StepResult, ctx: Ctx, run: RunContext) -> bool:
        state.rounds_judged += 1
        goal = _goal_of(state) or Goal.load(paths.goal)
        judged = await run.side_session(
            spec,
            _judge_prompt(goal if goal.complete else None, result.text),
            step_name=judge_label(step.name, state.rounds_judged),
        )
        if not judged.ok:
            state.judge_failed = judged
            raise StepAbort(f"the judge could not run: {judged.error or 'no result'}")
        verdict = Verdict.parse(judged.text)
        state.verdict = verdict
        if verdict.achieved:
            return True
        if not verdict.unreachable:
            return False
        return await _ask_about_unreachable(verdict, run)

    async def _ask_about_unreachable(verdict: Verdict, run: RunContext) -> bool:
        answer = await _ask(channel, unreachable_question(verdict.reason), UNREACHABLE_OPTIONS)
        if answer is None:
            raise StepAbort(_nobody(verdict.reason, paths, run))
        choice = unreachable_choice(answer)
        if choice == "accept":
            state.accepted = answer
            return True
        if choice == "change":
            change = await _ask(channel, "What is the new goal? One sentence; it is added to the current goal.", ())
            if not change:
                raise StepAbort(_nobody(verdict.reason, paths, run))
            goal = (_goal_of(state) or Goal.load(paths.goal)).amend(change)
            goal.write(paths.goal)
            state.goal = goal
            state.verdict = Verdict("not_yet", f"The person changed the goal. The new goal: {change}", verdict.failed)
            return False
        state.verdict = Verdict(
            "not_yet",
            f"The person says the goal can be reached and the judge is wrong. They said: {answer}",
            verdict.failed,
        )
        return False

    def on_reject(result: StepResult, ctx: Ctx) -> str:
        return state.verdict.feedback() if state.verdict is not None else ""

    return replace(step, gate=gate, on_reject=on_reject, retries=max(0, settings.round_limit - 1))


async def _ask(channel: HumanChannel, question: str, options: tuple[str, ...] | list[str]) -> str | None:
    """Ask through the channel; the answer, or None when nobody answered (timeout, declined, over quota)."""
    before = len(channel.asks)
    await channel.ask(question, list(options))
    item = channel.asks[before] if len(channel.asks) > before else None
    if item is None or item.state != "answered":
        return None
    return item.answer
