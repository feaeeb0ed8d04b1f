"""``flower go`` (and ``flower "build X"``): clarify → goal → judged work rounds, picked up again on wake."""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..._shared.exits import Exit, ExitCode
from .common import (
    exit_code_for,
    finish,
    handoff_policy,
    make_view,
    open_runtime,
    rescued,
)
from .credentials import ensure_credentials, interactive

if TYPE_CHECKING:
    from ...runtime import StepResult
    from ...view import Renderer
    from ...workflow import Ctx
    from .._global_options import GlobalOptions

__all__ = ["GoOptions", "run_go"]

DEFAULT_ROUNDS = 3
DEFAULT_TIMEOUT_S = 1800.0


@dataclass(frozen=True)
class GoOptions:
    """The command line of ``flower go`` as given (None = not given)."""

    ask: str = ""
    asks: int | None = None
    rounds: int | None = None
    no_goal: bool = False
    judge_can_run: bool = False
    timeout: float | None = None
    isolate: bool = False
    window: str | None = None
    no_handoff: bool = False
    new: bool = False
    clarify_only: bool = False
    no_trim: bool = False


def _check(opts: GoOptions) -> None:
    """Values no run can use: a usage error (exit 2) before anything starts."""
    if opts.rounds is not None and opts.rounds < 1:
        raise Exit(ExitCode.USAGE, f"--rounds must be at least 1 (rounds in all, each judged), not {opts.rounds}")
    if opts.asks is not None and opts.asks < 0:
        raise Exit(
            ExitCode.USAGE, f"--asks must be 0 (no questions) or more, not {opts.asks}; leave it out for no limit"
        )
    if opts.timeout is not None and (math.isnan(opts.timeout) or opts.timeout < 0):
        raise Exit(
            ExitCode.USAGE,
            f"--timeout must be 0 (decide at once), a number of seconds, or inf (wait forever), not {opts.timeout}",
        )


def _not_applying(opts: GoOptions, g: GlobalOptions) -> list[str]:
    """Options given that do nothing on this path: each is said, none silently ignored."""
    notes: list[str] = []
    if g.workbench:
        notes.append(
            "-W does not apply to go: go always keeps its workbench in <workspace>/.flower (beside it with --isolate)"
        )
    if g.trim:
        notes.append("-T does not apply to go: trimming is already on for go (--no-trim turns it off)")
    if opts.clarify_only:
        for given, name in (
            (opts.rounds is not None, "--rounds"),
            (opts.no_goal, "--no-goal"),
            (opts.judge_can_run, "--judge-can-run"),
            (opts.isolate, "--isolate"),
            (opts.window is not None, "--window"),
            (opts.no_handoff, "--no-handoff"),
        ):
            if given:
                notes.append(f"{name} does not apply with --clarify-only: only the brief is written")
    elif opts.no_goal:
        if opts.rounds is not None:
            notes.append("--rounds does not apply with --no-goal: without a judge there is one round")
        if opts.judge_can_run:
            notes.append("--judge-can-run does not apply with --no-goal: there is no judge")
    return notes


def _read_ask(view: Renderer, waking: bool) -> str:
    """The startup prompt on a terminal (on stderr, so stdout keeps only the answer)."""
    if waking:
        view.line(
            "Pick up where it stopped? Enter = carry on; or say something new; /new = start something else (Ctrl-C quits)",
            "bold",
        )
    else:
        view.line("What should be built? One sentence is enough; Enter starts (Ctrl-C quits)", "bold")
    sys.stderr.write("> ")
    sys.stderr.flush()
    line = sys.stdin.readline()
    if not line:
        raise Exit(ExitCode.USAGE, "no request given (input ended)")
    return line.strip()


def run_go(g: GlobalOptions, opts: GoOptions) -> None:
    _check(opts)
    handoff = handoff_policy(opts.window, opts.no_handoff)
    view, sink = make_view(g)
    for note in _not_applying(opts, g):
        view.line(f"  ! {note}", "yellow", wrap=True)
    ensure_credentials(view, verbose=g.verbose, reach=True, sink=sink if g.json else None)

    from ...go import (
        CLARIFY,
        WAKE_LABEL,
        WORK,
        Brief,
        GoSettings,
        NotesPaths,
        archive_for_new,
        build_go_flow,
        go_workbench,
        wake_banner,
        wake_state,
    )
    from ...runtime import Lineage

    if opts.isolate:
        from ...roles import worker
        from ...runtime import AgentSpec, isolation_problem

        probe = AgentSpec("coordinator", "", agents={"coder": worker("x", "x", isolate=True)})
        problem = isolation_problem(probe, g.workspace)
        if problem:
            raise Exit(ExitCode.CONFIG, f"--isolate: {problem.replace(repr('coder') + ' ', '')}")
    try:
        workbench = go_workbench(g.workspace, isolate=opts.isolate)
    except OSError as exc:
        from ...runtime import describe_os_error

        raise Exit(ExitCode.CONFIG, describe_os_error(exc, "the workbench", elsewhere="point -w elsewhere")) from exc
    lineage_path = g.run_dir / "lineage.json"

    ask = opts.ask.strip()
    new = opts.new
    if new:
        _archive(view, workbench.notes, lineage_path, archive_for_new)
    state = wake_state(workbench.notes, Lineage.open(g.run_dir, g.workspace))
    waking = state.waking
    if not ask and interactive() and not g.json:
        ask = _read_ask(view, waking)
        if ask == "/new":
            _archive(view, workbench.notes, lineage_path, archive_for_new)
            state = wake_state(workbench.notes, Lineage.open(g.run_dir, g.workspace))
            waking = False
            ask = _read_ask(view, waking)
    clarifying_again = not waking and CLARIFY in state.steps  # killed while clarifying: it resumes
    if not ask and not waking and not clarifying_again:
        raise Exit(
            ExitCode.USAGE,
            'say what to build, e.g. flower "a CLI that converts CSV to JSON" (or run `flower` in a terminal and type it)',
        )
    if opts.clarify_only and waking:
        view.line(
            f"  ! --clarify-only: the brief is already confirmed in {state.brief}; nothing to clarify (add --new to start over)",
            "yellow",
            wrap=True,
        )
        return
    if state.note and g.verbose:
        view.line(f"  ({state.note})", "dim")

    paths = NotesPaths.of(workbench.notes)
    timeout_s = DEFAULT_TIMEOUT_S if opts.timeout is None else (None if math.isinf(opts.timeout) else opts.timeout)
    from ...go import HumanChannel

    channel = HumanChannel(max_asks=opts.asks, timeout_s=timeout_s, log_path=paths.qa_log, amend_path=paths.brief)
    amended = False
    if waking and ask and not Brief.load(paths.brief).mentions(ask):
        amended = channel.amend(ask, WAKE_LABEL)
    settings = GoSettings(
        ask=ask,
        rounds=opts.rounds or DEFAULT_ROUNDS,
        goal=not opts.no_goal,
        judge_can_run=opts.judge_can_run,
        clarify_only=opts.clarify_only,
        isolate=opts.isolate,
        amended=amended,
    )
    workflow = build_go_flow(settings, channel=channel, workbench=workbench)

    runtime = open_runtime(g, workbench=workbench, trim=not opts.no_trim, handoff=handoff)
    if waking:
        work_session = state.steps.get(WORK)
        context = runtime.context_of(work_session) if work_session and runtime.has_session(work_session) else 0
        banner = wake_banner(state, g.workspace, context=context)
        head, _, tail = banner.partition(" · ")
        # Long paths would be clipped at the terminal's width; the path and the state each get a line then.
        for text in (banner,) if len(banner) <= view.width else (head, f"   {tail}"):
            view.line(text, "bold")
        if amended:
            view.line(f"  + added to the brief: {ask} (the goal is derived again)", "green")
    if not sys.stdin.isatty() and not g.json and opts.timeout is None:
        view.line(
            "  ! stdin is not a terminal: questions wait for lines on stdin and fall through when it ends "
            "(add --timeout 0 to let it decide on its own at once)",
            "yellow",
            wrap=True,
        )

    from ...go import GoDriver

    driver = GoDriver(
        runtime, channel, view=view, sink=sink, json_mode=g.json, interactive=interactive(), notes_dir=workbench.notes
    )
    with rescued(runtime, recorded="the step is"):
        import anyio

        from ...workflow import WorkflowError

        try:
            ctx = anyio.run(driver.run, workflow)
        except WorkflowError as exc:
            raise Exit(ExitCode.USAGE, str(exc)) from exc
        if driver.interrupted:
            last = runtime.results[-1].step if runtime.results else "none"
            raise Exit(ExitCode.INTERRUPTED, f"interrupted; the step {last!r} is recorded in {runtime.manifest_path}")
        _conclude(g, view, sink, runtime, ctx, settings, paths)


def _archive(view: Renderer, notes: Path, lineage_path: Path, archive_for_new: Any) -> None:
    done = archive_for_new(notes, lineage_path)
    for problem in done.problems:
        view.line(f"  ! {problem}", "yellow", wrap=True)
    if done.folder is not None:
        view.line(f"  <- starting over: the brief, the goal and the lineage moved to {done.folder}", "dim")


def _conclude(g: GlobalOptions, view: Renderer, sink: Any, runtime: Any, ctx: Ctx, settings: Any, paths: Any) -> None:
    """The answer and the closing line; exit 0 when done, else the reason and where to look."""
    from ...go import WORK

    results: dict[str, StepResult] = ctx.get("_results") or {}
    failed = ctx.get("_failed_at")
    ran = list(results)
    answer = results.get(failed) if failed else (results.get(ran[-1]) if ran else None)
    aborted = ctx.get("_aborted")
    if failed and not aborted and answer is not None and answer.ok and failed == WORK:
        verdict = ctx.get("_verdict")
        why = getattr(verdict, "reason", "") or "no reason given"
        aborted = f"the goal was not reached in {settings.rounds} round{'s' if settings.rounds != 1 else ''}; the judge's last reason: {why}"
    finish(g, view, sink, runtime, answer, failed_at=failed, aborted=aborted)
    if not failed:
        if ctx.get("_accepted"):
            view.line(
                f"  ! the judge said the goal is unreachable and the person accepted that ({ctx['_accepted']})",
                "yellow",
                wrap=True,
            )
        return
    judged: StepResult | None = ctx.get("_judge_failed")
    culprit = judged if judged is not None else answer
    code = exit_code_for(culprit) if culprit is not None and not culprit.ok else ExitCode.NOT_DONE
    reason = aborted or (answer.error if answer is not None else None) or "no result"
    if "look at" not in reason:
        reason += (
            f"; look at {paths.goal} and {runtime.manifest_path}"
            if failed == WORK
            else f"; see {runtime.manifest_path}"
        )
    raise Exit(code if code != ExitCode.DONE else ExitCode.NOT_DONE, f"stopped at step {failed!r}: {reason}")
