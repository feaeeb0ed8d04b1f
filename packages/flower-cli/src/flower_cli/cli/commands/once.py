"""``flower once PROMPT``: one agent, one step; the answer on stdout, progress on stderr."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._shared.exits import Exit, ExitCode
from .common import (
    exit_code_for,
    finish,
    handoff_policy,
    make_view,
    open_runtime,
    rescued,
)
from .credentials import ensure_credentials

if TYPE_CHECKING:
    from .._global_options import GlobalOptions

__all__ = ["run_once"]


def run_once(
    opts: GlobalOptions,
    prompt: str,
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
    if budget is not None and budget <= 0:
        raise Exit(ExitCode.USAGE, f"--budget must be a positive amount in USD, got {budget}.")
    if not prompt.strip():
        raise Exit(ExitCode.USAGE, 'the prompt is empty; say what to do, e.g. flower once "summarise README.md".')
    handoff = handoff_policy(window, no_handoff)
    view, sink = make_view(opts)
    ensure_credentials(view, verbose=opts.verbose, reach=True, sink=sink if opts.json else None)

    import anyio

    from ...runtime import AgentSpec
    from .store import store_label

    allowed = [t.strip() for t in tools.split(",") if t.strip()]
    spec = AgentSpec(
        "ad-hoc", instructions, allowed_tools=allowed, permission_mode=permission_mode, max_budget_usd=budget
    )
    runtime = open_runtime(opts, handoff=handoff)
    with rescued(runtime, recorded="the step is"):
        if resume and not runtime.has_session(resume):
            raise Exit(
                ExitCode.USAGE,
                f"no session {resume} for workspace {runtime.workspace} in {store_label(opts)}; "
                "`flower sessions` lists the ones there are.",
            )
        result = anyio.run(
            lambda: runtime.run(spec, prompt, step_name="ad-hoc", resume=resume, fork=fork, on_event=sink)
        )
        finish(opts, view, sink, runtime, result)
        code = exit_code_for(result)
        if code != ExitCode.DONE:
            raise Exit(code, f"the step did not finish: {result.error or 'no result'}")
