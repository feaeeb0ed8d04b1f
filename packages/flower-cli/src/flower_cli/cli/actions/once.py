"""``flower once PROMPT``: one agent, one step; the answer on stdout, progress on stderr."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from ..._shared.exits import Exit, ExitCode
from ...runtime import AgentSpec
from .budget import budget_exit, budget_from
from .closing import finish
from .credentials import ensure_credentials
from .exit_codes import exit_code_for, failure_reason
from .handoff import handoff_policy
from .limited import continue_after
from .opening import open_runtime
from .output import make_view
from .publish import publishing
from .rescue import rescued, run_rescued
from .session_ids import resolve_session
from .stdin_prompt import prompt_from
from .store import store_label

if TYPE_CHECKING:
    from .._global_options import GlobalOptions

__all__ = ["run_once"]


def run_once(
    opts: GlobalOptions,
    prompt: str | None,
    *,
    instructions: str,
    tools: str,
    permission_mode: str,
    budget: float | None,
    resume: str | None,
    fork: bool,
    window: str | None = None,
    no_handoff: bool = False,
) -> None:
    if fork and not resume:
        raise Exit(ExitCode.USAGE, "--fork branches off an existing session; give it one with --resume SESSION_ID.")
    budget = budget_from(budget)
    prompt, _ = prompt_from(prompt, command="flower once", example='flower once "summarise README.md"')
    if not prompt.strip():
        raise Exit(ExitCode.USAGE, 'the prompt is empty; say what to do, e.g. flower once "summarise README.md".')
    handoff = handoff_policy(window, no_handoff)
    allowed = [t.strip() for t in tools.split(",") if t.strip()]

    def allow_hint(tool: str) -> str:
        return f"add it with -t {','.join([*allowed, tool])}"

    view, sink = make_view(opts, allow_hint=allow_hint)
    ensure_credentials(view, verbose=opts.verbose, reach=True, sink=sink if opts.json else None)

    spec = AgentSpec(
        "ad-hoc", instructions, allowed_tools=allowed, permission_mode=permission_mode, max_budget_usd=budget
    )
    # The run is this one query: the run budget is also its SDK cap (checked after every model request, as -b
    # always was), and a query the cap stops ends as a run the budget stopped (exit 6).
    runtime = open_runtime(opts, handoff=handoff, budget=budget)
    with rescued(runtime, recorded="the step is", again='flower once --resume {session} "…"'):
        if resume:  # a unique prefix is enough (`flower analyze` shows 8 characters)
            where = f"for workspace {runtime.workspace} in {store_label(opts)}"
            resume = resolve_session(runtime.store, runtime.project_key, resume, where=where)
        with publishing(opts, runtime, sink, command="once") as published:
            sink = published.sink  # every event is published for `flower status/watch` as well
            result = run_rescued(
                runtime,
                lambda: published.main(
                    lambda: runtime.run(spec, prompt, step_name="ad-hoc", resume=resume, fork=fork, on_event=sink)
                ),
            )
            published.check_stopped(opts.workspace)
            assert result is not None  # only a stop ends main without a result, and check_stopped left then
            finish(opts, view, sink, runtime, result)
            again = f'flower once --resume {result.session_id} --budget {{budget}} "carry on"'
            spent = budget_exit(runtime, again if result.session_id else "flower once --budget {budget} PROMPT")
            if spent is not None:
                raise spent
            code = exit_code_for(result)
            if code != ExitCode.DONE:
                again = f'flower -w {shlex.quote(str(runtime.workspace))} once --resume {result.session_id} "continue"'
                tail = continue_after(result, again if result.session_id else None)
                raise Exit(code, f"the step did not finish: {failure_reason(result)}{tail}")
