"""What several commands share: the renderer, the credential gate, a runtime's lifetime, the exit code mapping."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..exits import Exit, ExitCode
from ..render import JsonRenderer, Renderer

if TYPE_CHECKING:
    from ..global_options import GlobalOptions
    from ..result import StepResult
    from ..runtime import Runtime

__all__ = ["ensure_credentials", "exit_code_for", "finish", "interactive", "make_view", "rescued", "show_settings"]


def interactive() -> bool:
    return sys.stdin.isatty()


def make_view(opts: GlobalOptions) -> tuple[Renderer, Any]:
    """The human renderer (stderr) and the event sink: the renderer itself, or JSON lines on stdout."""
    human = Renderer(verbose=opts.verbose)
    return human, (JsonRenderer() if opts.json else human)


@contextlib.contextmanager
def rescued(runtime: Runtime, *, recorded: str) -> Iterator[None]:
    """A command's hold on ``runtime``: no step may vanish from the manifest, whatever ends the process.

    SIGTERM/SIGHUP record the in-flight step and unwind, so the Claude Code subprocess is closed too; then
    the process dies of that signal. Ctrl-C records it and exits 130 saying where (``recorded``: "the step
    is", "the steps so far are"). The signal handlers are restored and the runtime closed on every path.
    """
    from ..runtime import Runtime, Terminated

    restore = runtime.install_signal_rescue()
    try:
        yield
    except Terminated as stop:
        restore()
        runtime.close()
        stop.die()
        raise
    except KeyboardInterrupt:
        runtime.rescue(reason=Runtime.INTERRUPTED)
        raise Exit(ExitCode.INTERRUPTED, f"interrupted; {recorded} recorded in {runtime.manifest_path}")
    finally:
        restore()
        runtime.close()


def finish(opts: GlobalOptions, view: Renderer, sink: Any, runtime: Runtime, answer: StepResult | None, **done: Any) -> None:
    """How ``once`` and ``run`` end, the same way: notes, the answer, the closing line.

    The answer (the final step's final text) goes to stdout — or, with ``--json``, a last ``done`` event
    carrying it and ``done``'s fields. Each step already drew its own one ``+ done``/``x failed`` line from
    its ``result`` event; this adds the run's closing line (total cost, manifest) on stderr.
    """
    for note in runtime.manifest.notes:
        view.line(f"  ! {note}", "yellow")
    ok = answer is not None and answer.ok and not done.get("failed_at")
    text = answer.text if answer is not None else ""
    if opts.json:
        sink.emit({"kind": "done", "ok": ok, "text": text, "error": answer.error if answer else None,
                   "session_id": answer.session_id if answer else None, "cost_usd": runtime.total_cost(), **done})
    elif ok and text:
        sys.stdout.write(text.rstrip("\n") + "\n")
        sys.stdout.flush()
    view.closing(runtime.total_cost(), str(runtime.manifest_path))


def show_settings(view: Renderer) -> None:
    import flower_env

    for setting in flower_env.settings():
        view.line(f"  {setting.key} = {setting.display}  ({setting.source})", "dim")


def ensure_credentials(view: Renderer, *, probe: bool = True) -> None:
    """Gate 1: a credential exists (else setup on a terminal, else exit 3). Gate 2: it works (live probe)."""
    import flower_env

    flower_env.load_dotenv()
    for note in flower_env.load_notes():
        view.line(f"  ! {note}", "yellow")
    problem = flower_env.check_credentials()
    if problem:
        if not interactive():
            raise Exit(ExitCode.CONFIG, problem)
        from .setup import interactive_setup

        view.line("First run? One credential is all flower needs.", "yellow")
        if not interactive_setup(view):
            raise Exit(ExitCode.CONFIG, problem)
    if not probe or os.environ.get("FLOWER_NO_PROBE") or not interactive():
        return
    for attempt in (1, 2):
        view.line("- checking the credential…", "dim")
        verdict = flower_env.probe_credentials()
        if verdict.verdict in ("ok",):
            return
        if verdict.verdict == "net":
            view.line(f"  (the probe did not get through: {verdict.detail[:80]} — treating it as a network problem, going on)", "dim")
            return
        what = "credential rejected" if verdict.verdict == "auth" else "gateway address or model name is wrong"
        view.line(f"! {what}: {verdict.detail[:160]}", "red")
        from .setup import interactive_setup

        if attempt == 2 or not interactive_setup(view, reason="Let's fix it; it is checked again right after."):
            raise Exit(ExitCode.CONFIG, f"{what}; run `flower setup` to reconfigure.")


def exit_code_for(result: StepResult) -> ExitCode:
    """0 done; 130 interrupted; 4 network not back in time; 3 credentials/configuration; else 1."""
    if result.ok:
        return ExitCode.DONE
    from ..runtime import Runtime

    if result.error in (Runtime.INTERRUPTED, Runtime.KILLED):
        return ExitCode.INTERRUPTED
    if (result.error or "").startswith("network not back"):
        return ExitCode.OFFLINE
    import flower_resilience

    if result.error and flower_resilience.classify(result.error) == "fatal" and _looks_like_credentials(result.error):
        return ExitCode.CONFIG
    return ExitCode.NOT_DONE


def _looks_like_credentials(error: str) -> bool:
    lowered = error.lower()
    return any(w in lowered for w in ("authentication", "api key", "unauthorized", "401", "403", "permission_error", "x-api-key"))
