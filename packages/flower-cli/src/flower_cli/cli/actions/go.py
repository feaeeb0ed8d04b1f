"""``flower go`` (and ``flower "build X"``): clarify → goal → judged work rounds, picked up again on wake."""

from __future__ import annotations

import math
import shlex
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import flower_workbench

from ..._shared.budget import BUDGET_FILE, budget_status, read_budget
from ..._shared.exits import Exit, ExitCode
from ...go import (
    CLARIFY,
    WAKE_LABEL,
    WORK,
    Brief,
    GoDriver,
    HumanChannel,
    NotesPaths,
    achieved,
    archive_for_new,
    build_go_flow,
    go_workbench,
    wake_banner,
    wake_state,
)
from ...roles import worker
from ...runtime import AgentSpec, Lineage, RunBudget, StepResult, describe_os_error, isolation_problem
from ...workflow import WorkflowError
from .budget import budget_from
from .closing import conclude
from .credentials import ensure_credentials, interactive
from .go_settings import keep_settings, kept_settings
from .handoff import handoff_policy
from .opening import open_runtime
from .output import make_view
from .publish import publishing
from .rescue import interrupted_line, rescued, run_rescued
from .stdin_prompt import STDIN, prompt_from

if TYPE_CHECKING:
    from ...go import GoSettings, GoState, WakeState
    from ...runtime import Runtime
    from ...view import Renderer
    from ...workflow import RunResult
    from .._global_options import GlobalOptions

__all__ = ["run_go"]


def _check(opts: GoSettings) -> None:
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


def _not_applying(opts: GoSettings, g: GlobalOptions) -> list[str]:
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
            (not opts.goal, "--no-goal"),
            (opts.judge_can_run, "--judge-can-run"),
            (opts.isolate, "--isolate"),
            (opts.window is not None, "--window"),
            (not opts.handoff, "--no-handoff"),
        ):
            if given:
                notes.append(f"{name} does not apply with --clarify-only: only the brief is written")
    elif not opts.goal:
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


def run_go(g: GlobalOptions, opts: GoSettings) -> None:
    _check(opts)
    opts = replace(opts, budget=budget_from(opts.budget))
    from_stdin = opts.ask.strip() == STDIN
    if from_stdin:  # `flower go -`: the whole of stdin is the request (a spec file piped in)
        ask, _ = prompt_from(STDIN, command="flower go", example='flower go "a CLI that converts CSV to JSON"')
        opts = replace(opts, ask=ask)
    handoff = handoff_policy(opts.window, not opts.handoff)
    view, sink = make_view(g)
    for note in _not_applying(opts, g):
        view.line(f"  ! {note}", "yellow", wrap=True)
    opts = kept_settings(g, opts, view)
    if _already_achieved(g, opts, view, sink):
        return  # before the credential check: nothing is sent, nothing is paid
    ensure_credentials(view, verbose=g.verbose, reach=True, sink=sink if g.json else None)

    workbench = _workbench(g, opts)
    kept = read_budget(workbench.notes / BUDGET_FILE)  # before --new archives it: a new run keeps the limit
    start = _where_to_start(g, opts, view, workbench.notes)
    if start is None:
        return
    _ensure(workbench)  # only now: a run refused for want of a request leaves the directory as it was
    limit = opts.budget if opts.budget is not None else (kept.limit_usd if kept is not None else None)
    budget = RunBudget.kept(workbench.notes / BUDGET_FILE, limit)
    ask, state = start
    paths = NotesPaths.of(workbench.notes)
    channel = HumanChannel(max_asks=opts.asks, timeout_s=opts.timeout_s, log_path=paths.qa_log, amend_path=paths.brief)
    amended = False
    if state.waking and ask and not Brief.load(paths.brief).mentions(ask):
        amended = channel.amend(ask, WAKE_LABEL)
    settings = replace(opts, ask=ask, amended=amended)
    workflow = build_go_flow(settings, channel=channel, workbench=workbench)

    runtime = open_runtime(g, workbench=workbench, trim=opts.trim, handoff=handoff, budget=budget)
    if not opts.clarify_only:
        keep_settings(g, opts)
    if state.waking:
        _say_waking(g, view, runtime, state, ask if amended else None)
    if budget is not None and (state.waking or budget.spent_usd):
        view.line(f"  {budget_status(budget.file())}", "dim")
    _say_who_answers(g, opts, view, from_stdin)

    again = "run `flower` again in this workspace (it picks the run up)"
    with (
        rescued(runtime, recorded="the step is", again=again),
        publishing(g, runtime, sink, command="go", channel=channel) as published,
    ):
        sink = published.sink  # every event is published for `flower status/watch` and the page as well
        driver = GoDriver(
            runtime,
            channel,
            view=view,
            sink=sink,
            json_mode=g.json,
            interactive=interactive(),
            notes_dir=workbench.notes,
        )
        try:
            outcome = run_rescued(runtime, lambda: published.main(lambda: driver.run(workflow)))
        except WorkflowError as exc:
            raise Exit(ExitCode.USAGE, str(exc)) from exc
        published.check_stopped(g.workspace)
        if driver.interrupted or outcome is None:
            last = runtime.results[-1].step if runtime.results else "none"
            raise Exit(ExitCode.INTERRUPTED, interrupted_line(runtime, recorded=f"the step {last!r} is", again=again))
        _conclude(g, view, sink, runtime, outcome, workflow.state, settings, paths)


def _workbench(g: GlobalOptions, opts: GoSettings) -> flower_workbench.Workbench:
    """go's workbench, in ``<workspace>/.flower`` (beside the workspace with ``--isolate``, which needs git);
    not created yet (`_ensure` does that once the run is sure to start)."""
    if opts.isolate:
        probe = AgentSpec("coordinator", "", agents={"coder": worker("x", "x", isolate=True)})
        problem = isolation_problem(probe, g.workspace)
        if problem:
            raise Exit(ExitCode.CONFIG, f"--isolate: {problem.replace(repr('coder') + ' ', '')}")
    return go_workbench(g.workspace, isolate=opts.isolate, create=False)


def _ensure(workbench: flower_workbench.Workbench) -> None:
    """Create the workbench's folders; a workspace that cannot hold them is a one-line configuration error."""
    try:
        workbench.ensure()
    except OSError as exc:
        raise Exit(ExitCode.CONFIG, describe_os_error(exc, "the workbench", elsewhere="point -w elsewhere")) from exc


def _where_to_start(g: GlobalOptions, opts: GoSettings, view: Renderer, notes: Path) -> tuple[str, WakeState] | None:
    """(the request, the state the notes and the lineage are in): ``--new`` archives first; on a terminal with
    no request, the person is asked (``/new`` starts over). None: nothing to do (``--clarify-only`` on a
    confirmed brief)."""
    lineage_path = g.run_dir / "lineage.json"
    ask = opts.ask.strip()
    if opts.new:
        _archive(view, notes, lineage_path)
    state = wake_state(notes, Lineage.open(g.run_dir, g.workspace))
    if not ask and interactive() and not g.json:
        ask = _read_ask(view, state.waking)
        if ask == "/new":
            _archive(view, notes, lineage_path)
            state = wake_state(notes, Lineage.open(g.run_dir, g.workspace))
            state = replace(state, waking=False)
            ask = _read_ask(view, state.waking)
    clarifying_again = not state.waking and CLARIFY in state.steps  # killed while clarifying: it resumes
    if not ask and not state.waking and not clarifying_again:
        raise Exit(
            ExitCode.USAGE,
            'say what to build, e.g. flower "a CLI that converts CSV to JSON" (or run `flower` in a terminal and type it)',
        )
    if opts.clarify_only and state.waking:
        view.line(
            f"  ! --clarify-only: the brief is already confirmed in {state.brief}; nothing to clarify (add --new to start over)",
            "yellow",
            wrap=True,
        )
        return None
    if state.note and g.verbose:
        view.line(f"  ({state.note})", "dim")
    return ask, state


def _say_waking(g: GlobalOptions, view: Renderer, runtime: Runtime, state: WakeState, added: str | None) -> None:
    """The wake banner (where the run stopped, its context); ``added``: the request that amended the brief."""
    work_session = state.steps.get(WORK)
    context = runtime.context_of(work_session) if work_session and runtime.has_session(work_session) else 0
    banner = wake_banner(state, g.workspace, context=context)
    head, _, tail = banner.partition(" · ")
    # Long paths would be clipped at the terminal's width; the path and the state each get a line then.
    for text in (banner,) if len(banner) <= view.width else (head, f"   {tail}"):
        view.line(text, "bold")
    if added is not None:
        view.line(f"  + added to the brief: {added} (the goal is derived again)", "green")


def _say_who_answers(g: GlobalOptions, opts: GoSettings, view: Renderer, from_stdin: bool) -> None:
    """Without a terminal on stdin, where the questions go (and that they fall through when nobody answers)."""
    if from_stdin and not sys.stdin.isatty() and opts.timeout is None:
        view.line(
            "  ! the request came from stdin, so nobody can answer questions there: they fall through at once "
            "and the model records its assumptions (give the request as an argument to answer them)",
            "yellow",
            wrap=True,
        )
    elif not sys.stdin.isatty() and not g.json and opts.timeout is None:
        view.line(
            "  ! stdin is not a terminal: questions wait for lines on stdin and fall through when it ends "
            "(add --timeout 0 to let it decide on its own at once)",
            "yellow",
            wrap=True,
        )


def _already_achieved(g: GlobalOptions, opts: GoSettings, view: Renderer, sink: Any) -> bool:
    """A wake with nothing new in a directory whose goal the judge passed: say so (when, where the verdict
    is) and end with 0 instead of resuming the work session and judging it again (a paid round for nothing).

    New words (not already in the brief), ``--new``, ``--clarify-only`` and ``--no-goal`` go on as before.
    """
    if opts.new or opts.clarify_only or not opts.goal:
        return False
    workspace = g.workspace
    bench = flower_workbench.Workbench.beside(workspace) if opts.isolate else flower_workbench.Workbench(workspace)
    ask = opts.ask.strip()
    if ask and not Brief.load(NotesPaths.of(bench.notes).brief).mentions(ask):
        return False  # a new sentence: it amends the brief and the run goes on
    done = achieved(bench.notes, g.run_dir, workspace)
    if done is None:
        return False
    if g.json:
        sink.emit({"kind": "done", "ok": True, "text": "", "cost_usd": 0.0, "session_id": None, **done.event()})
    view.line(done.says(), "green", wrap=True)
    return True


def _archive(view: Renderer, notes: Path, lineage_path: Path) -> None:
    done = archive_for_new(notes, lineage_path)
    for problem in done.problems:
        view.line(f"  ! {problem}", "yellow", wrap=True)
    if done.folder is not None:
        view.line(f"  <- starting over: the brief, the goal and the lineage moved to {done.folder}", "dim")


def _conclude(
    g: GlobalOptions,
    view: Renderer,
    sink: Any,
    runtime: Runtime,
    outcome: RunResult,
    state: GoState,
    settings: GoSettings,
    paths: NotesPaths,
) -> None:
    """The answer and the closing line; exit 0 when done, else the reason and where to look."""

    failed = outcome.failed_at
    unmet = None
    if failed == WORK and outcome.answer is not None and outcome.answer.ok:  # every round judged, none achieved
        why = (state.verdict.reason if state.verdict is not None else "") or "no reason given"
        rounds = settings.round_limit
        unmet = (
            f"the goal was not reached in {rounds} round{'s' if rounds != 1 else ''}; the judge's last reason: {why}"
        )
    see = f"look at {paths.goal} and {runtime.manifest_path}" if failed == WORK else f"see {runtime.manifest_path}"
    # A judge that could not run decides the exit code (a network outage is 4, not 1). A step that gave nothing
    # usable is exit 1 whatever its last words say (they are quoted in its error, not a failure of their own).
    culprit = state.judge_failed
    if state.produced_nothing is not None:
        culprit = StepResult(step=state.produced_nothing, ok=False)
    wake = f"flower -w {shlex.quote(str(g.workspace))}"  # the wake: the run goes on where it stopped, same sessions
    conclude(g, view, sink, runtime, outcome, unmet=unmet, not_passed="no result", culprit=culprit, see=see, again=wake)
    if state.accepted:
        view.line(
            f"  ! the judge said the goal is unreachable and the person accepted that ({state.accepted})",
            "yellow",
            wrap=True,
        )
