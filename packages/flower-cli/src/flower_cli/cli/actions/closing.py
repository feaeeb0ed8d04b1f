"""How ``once``, ``run`` and ``go`` end, the same way: notes, the answer (stdout, or the ``done`` event with
``--json``), the closing line on stderr, and for a workflow that stopped, one line and its exit code."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

from ..._shared.exits import Exit, ExitCode
from ...runtime import UNSTORED
from .budget import budget_exit
from .exit_codes import exit_code_for, failure_reason
from .limited import continue_after
from .output import write_stdout

if TYPE_CHECKING:
    from ...runtime import Runtime, StepResult
    from ...view import Renderer
    from ...workflow import RunResult
    from .._global_options import GlobalOptions

__all__ = ["GATE_NOT_PASSED", "conclude", "finish"]

GATE_NOT_PASSED = "its gate did not pass in any round"


def finish(
    opts: GlobalOptions, view: Renderer, sink: Any, runtime: Runtime, answer: StepResult | None, **done: Any
) -> None:
    """How ``once``, ``run`` and ``go`` end, the same way: notes, the answer, the closing line.

    The answer (the final step's final text) goes to stdout — or, with ``--json``, a last ``done`` event
    carrying it and ``done``'s fields; when stdout is the terminal the progress is drawn on, the answer is
    already there and is not printed twice. Each step already drew its own one ``+ done``/``x failed`` line
    from its ``result`` event; this adds the run's closing line (total cost, the session id to resume, the
    manifest, refused tool calls) on stderr.
    """
    for note in runtime.manifest.notes:
        view.line(f"  ! {note}", "yellow")
    diagnostics = runtime.harness_log.lines
    if diagnostics:
        view.line(
            f"  ! Claude Code wrote {diagnostics} line{'s' if diagnostics != 1 else ''} of its own diagnostics "
            f"to {runtime.harness_log.path}",
            "yellow",
        )
    ok = answer is not None and answer.ok and not done.get("failed_at")
    text = answer.text if answer is not None else ""
    # With --json the events went to the JSON sink, which counted the refusals; else the renderer did.
    refused: int = getattr(sink, "refused", view.refused)
    if opts.json:
        sink.emit(
            {
                "kind": "done",
                "ok": ok,
                "text": text,
                "error": answer.error if answer else None,
                "session_id": answer.session_id if answer else None,
                "cost_usd": runtime.total_cost(),
                "harness_log": str(runtime.harness_log.path) if diagnostics else None,
                "refused": refused,
                # spend against the run's budget (limit, spent), None without one
                "budget": budget.row() if (budget := getattr(runtime, "budget", None)) is not None else None,
                **done,
            }
        )
    elif (ok or _only_unstored(answer, done)) and text and not _on_the_same_terminal(view.stream):
        write_stdout(text.rstrip("\n") + "\n")
    view.closing(
        runtime.total_cost(),
        str(runtime.manifest_path),
        answer.session_id if answer is not None else None,
        refused=refused,
    )


def _only_unstored(answer: StepResult | None, done: dict[str, Any]) -> bool:
    """The step's answer stands; only its transcript is not all in the store (the exit line says so)."""
    return answer is not None and not done.get("failed_at") and (answer.error or "").startswith(UNSTORED)


def _on_the_same_terminal(progress: Any) -> bool:
    """Whether stdout is the very terminal the progress goes to: the renderer has shown the answer there.

    Then printing it on stdout too would show it twice. Anywhere else (a pipe, a file, another terminal)
    stdout gets the answer, and only the answer.
    """
    try:
        if not (sys.stdout.isatty() and progress.isatty()):
            return False
        return os.fstat(sys.stdout.fileno()).st_rdev == os.fstat(progress.fileno()).st_rdev
    except (AttributeError, OSError, ValueError):  # a stream without a descriptor (captured): not a terminal
        return False


def conclude(
    opts: GlobalOptions,
    view: Renderer,
    sink: Any,
    runtime: Runtime,
    outcome: RunResult,
    *,
    unmet: str | None = None,
    not_passed: str = GATE_NOT_PASSED,
    culprit: StepResult | None = None,
    see: str = "",
    again: str | None = None,
    raise_budget: str = "",
) -> None:
    """How ``go`` and ``run`` end a workflow that ran to its end: `finish` (notes, the answer, the closing line),
    then return when no step stopped it, else a one-line `Exit` naming the step and why (exit 1 unless the
    failure itself says otherwise: 3 credentials or a full disk, 4 network, 130 interrupted).

    ``unmet``: the command's reason for the stop when the workflow recorded none (go: the goal was not reached);
    the ``done`` event carries it too. ``not_passed``: said when the stopped step's last attempt ran to its end
    and nothing else explains it. ``culprit``: the session whose error decides the exit code (default: the
    stopped step's result). ``see``: where to look, added unless the reason already says ("look at").
    ``again``: the command that continues the run (said, with the reset time, when a usage limit stopped it).
    ``raise_budget``: the command that continues a run the budget stopped (``{budget}``: a higher budget); such
    a run exits 6 with what was spent, on what, and that command.
    """
    failed = outcome.failed_at
    answer = outcome.answer
    aborted = outcome.aborted or (unmet if failed else None)
    finish(opts, view, sink, runtime, answer, failed_at=failed, aborted=aborted)
    if failed is None:
        return
    spent = budget_exit(runtime, raise_budget or "flower --budget {budget}")
    if spent is not None:
        raise spent
    decisive = culprit if culprit is not None else answer
    code = exit_code_for(decisive) if decisive is not None else ExitCode.NOT_DONE
    reason = aborted or (failure_reason(answer) if answer is not None and answer.error else None)
    if not reason:
        reason = not_passed if answer is not None and answer.ok else "no result"
    if see and "look at" not in reason:
        reason += f"; {see}"
    if decisive is not None:
        reason += continue_after(decisive, again)
    raise Exit(code if code != ExitCode.DONE else ExitCode.NOT_DONE, f"stopped at step {failed!r}: {reason}")
