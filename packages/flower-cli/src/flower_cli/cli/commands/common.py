"""What several commands share: the renderer, a runtime's lifetime, how a run ends (answer, closing line, exit code)."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, TypeVar, cast

import flower_resilience

from ..._shared.exits import Exit, ExitCode
from ...runtime import (
    UNSTORED,
    HandoffPolicy,
    Runtime,
    Terminated,
    describe_os_error,
    explain,
    lease_ttl_from_env,
    parse_token_count,
)
from ...view import STDOUT, JsonRenderer, Renderer
from .store import explained

if TYPE_CHECKING:
    from ...runtime import HandoffPolicy, Runtime, StepResult
    from ...workflow import RunResult
    from .._global_options import GlobalOptions

__all__ = [
    "conclude",
    "exit_code_for",
    "finish",
    "handoff_policy",
    "make_view",
    "open_runtime",
    "rescued",
    "run_rescued",
    "write_stdout",
]

T = TypeVar("T")
_RESCUED_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


def make_view(opts: GlobalOptions, *, allow_hint: Callable[[str], str] | None = None) -> tuple[Renderer, Any]:
    """The human renderer (stderr) and the event sink: the renderer itself, or JSON lines on stdout.

    ``allow_hint`` says how to let a refused tool run on this command (see `Renderer`).
    """
    human: Renderer = opts.renderer(allow_hint=allow_hint)
    # cast: a TextIOBase, which is what the renderer uses of a TextIO (write, flush).
    return human, (JsonRenderer(cast("TextIO", STDOUT)) if opts.json else human)


@contextlib.contextmanager
def rescued(runtime: Runtime, *, recorded: str, again: str) -> Iterator[None]:
    """A command's hold on ``runtime``: no step may vanish from the manifest, whatever ends the process.

    SIGTERM/SIGHUP record the in-flight step and unwind, so the Claude Code subprocess is closed too; then one
    line says so and how to continue (``again``; ``{session}`` in it is the in-flight step's session id) and
    the process dies of that signal (exit status 143 / 129 to the shell). Ctrl-C records it and exits 130
    saying where (``recorded``: "the step is", "the steps so far are"). The signal handlers are restored and
    the runtime closed on every path.
    """

    restore = runtime.install_signal_rescue()
    try:
        yield
    except Terminated as stop:
        restore()
        runtime.close()
        _say_terminated(runtime, stop.signum, recorded=recorded, again=again)
        stop.die()
        raise
    except KeyboardInterrupt:
        runtime.rescue(reason=Runtime.INTERRUPTED)
        raise Exit(ExitCode.INTERRUPTED, f"interrupted; {recorded} recorded in {runtime.manifest_path}") from None
    except Exit as stop:
        failed = runtime.manifest_error
        if failed is None or stop.code == ExitCode.INTERRUPTED:
            raise
        # Both said in the one line: the step's own reason, and that its row is missing from the manifest.
        raise Exit(stop.code, f"{stop.message}; {_manifest_problem(runtime, failed)}") from None
    except Exception as exc:
        # A store or a disk that fails mid-command (a lineage write, a broken store found on --resume):
        # one line that names the file, not a traceback. What was written stays; nothing is retried over it.
        raise _explained(exc, _sqlite_file(runtime)) from exc
    finally:
        restore()
        runtime.close()
    failed = runtime.manifest_error
    if failed is not None:
        # The step ran and its answer was shown; only its row is missing, and the user must know why.
        raise Exit(ExitCode.CONFIG, _manifest_problem(runtime, failed))


def run_rescued(runtime: Runtime, main: Callable[[], Awaitable[T]]) -> T:
    """``anyio.run(main)``, where SIGTERM/SIGHUP record the in-flight step, cancel ``main`` and then raise
    `Terminated` (which `rescued` turns into the closing line and the death by that signal).

    Why not the plain handler of ``Runtime.install_signal_rescue`` while the loop runs: it raises wherever the
    main thread happens to be, and on a busy machine that is often the middle of some task (the SDK's reader, a
    lease renewal) rather than the loop waiting; the exception then ends only that task and the step waits
    forever (seen: 2 of 16 SIGTERMs on a loaded machine hung for over a minute). Here the loop hears the signal
    and cancels ``main`` itself, so the unwinding (the harness closed, the lease released) always runs.
    """
    import anyio
    import anyio.abc

    heard: list[int] = []
    results: list[T] = []
    failures: list[BaseException] = []

    async def watched() -> None:
        async with anyio.create_task_group() as tg:

            async def watch(*, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
                with anyio.open_signal_receiver(*_RESCUED_SIGNALS) as signals:
                    task_status.started()
                    async for signum in signals:
                        heard.append(int(signum))
                        runtime.rescue()
                        tg.cancel_scope.cancel()  # `main` unwinds from where it is, the harness closed on the way
                        return

            await tg.start(watch)  # the loop hears the signals before `main` runs
            try:
                results.append(await main())
            except anyio.get_cancelled_exc_class():
                raise
            except BaseException as exc:  # noqa: BLE001 - raised after the loop as it came, not as an exception group
                failures.append(exc)
            finally:
                tg.cancel_scope.cancel()

    try:
        anyio.run(watched)
    finally:
        # The loop's handlers are gone with it (they leave the default, "die at once", behind): a second signal
        # must not cut the closing line short, and one after the run is the command's own rescue again.
        for signum in _RESCUED_SIGNALS:
            signal.signal(signum, signal.SIG_IGN if heard else signal.SIG_DFL)
        if not heard:
            runtime.install_signal_rescue()
    if heard:
        raise Terminated(heard[0])
    if failures:
        raise failures[0]
    return results[0]


def _manifest_problem(runtime: Runtime, failed: OSError) -> str:
    named = failed if failed.filename else OSError(failed.errno, failed.strerror, str(runtime.manifest_path))
    problem = describe_os_error(named, "the manifest", elsewhere="point -r elsewhere")
    return f"{problem} (the run's rows are missing from it; {_what_is_kept(runtime)})"


def _what_is_kept(runtime: Runtime) -> str:
    """Said only when true: the store is asked whether it holds each session of the run."""
    sessions = {r.session_id for r in runtime.results if r.session_id}
    gaps = any((r.error or "").startswith(UNSTORED) for r in runtime.results)
    try:
        held = not gaps and all(runtime.has_session(s) for s in sessions)
    except Exception:  # noqa: BLE001 - a store that cannot answer does not hold them as far as anyone can tell
        held = False
    if held:
        return f"its answer is shown and its sessions are kept in {runtime.store_where}"
    return (
        f"its answer is shown, but {runtime.store_where} does not hold all of its sessions: "
        "`flower sessions import SESSION_ID` adds them from the harness's local copy"
    )


def _say_terminated(runtime: Runtime, signum: int, *, recorded: str, again: str) -> None:
    """The one line a stopped run leaves: which signal, what was recorded where, the command that goes on."""
    import signal

    from ...view import sanitize

    try:
        name = signal.Signals(signum).name
    except ValueError:
        name = f"signal {signum}"
    last = runtime.results[-1] if runtime.results else None
    session = last.session_id if last is not None else None
    if runtime.manifest_error is not None:
        kept = f"{recorded} not recorded ({runtime.manifest_error.strerror or runtime.manifest_error}); its session is kept"
    else:
        kept = f"{recorded} recorded in {runtime.manifest_path}"
    if session:
        kept += f" (session {session})"
    if "{session}" in again:
        again = again.format(session=session) if session else "run the same command again"
    line = f"flower: stopped by {name}; {kept}; to continue: {again}"
    try:
        sys.stderr.write(sanitize(line) + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):  # a closed stderr must not keep the process from dying of the signal
        pass


def handoff_policy(window: str | None, no_handoff: bool) -> HandoffPolicy:
    """``--window`` / ``--no-handoff`` as a policy, or a one-line usage `Exit` for a wrong value."""

    if no_handoff:
        if window is not None:
            raise Exit(
                ExitCode.USAGE, "--window sets when a session hands off; it means nothing with --no-handoff (drop one)."
            )
        return HandoffPolicy(enabled=False)
    if window is None:
        return HandoffPolicy()  # the window comes from FLOWER_WINDOW, the calibration file or the model name
    try:
        return HandoffPolicy(window=parse_token_count(window))
    except ValueError as exc:
        raise Exit(ExitCode.USAGE, f"--window: {exc}.") from exc


def open_runtime(
    opts: GlobalOptions, *, workbench: Any = None, handoff: HandoffPolicy | bool = True, trim: bool | None = None
) -> Runtime:
    """The command's Runtime on its store (``--store``, else ``<run dir>/sessions.db``), or a one-line `Exit`
    saying what is wrong with the workspace (which must exist), the run dir (created, 0700) or the store.

    ``trim`` overrides ``-T`` (``go`` trims by default).

    The run dir is tried for writing first: a read-only or full disk is found before a paid step runs,
    not when its record cannot be written at the end.
    """

    from .._workspace import check_workspace

    check_workspace(opts.workspace)  # checked at start too; it may have been removed since (never created here)
    try:
        lease_ttl = lease_ttl_from_env(os.environ)
    except ValueError as exc:
        raise Exit(ExitCode.USAGE, str(exc)) from exc
    try:
        _check_writable(opts.run_dir)
        return Runtime(
            opts.workspace,
            opts.run_dir,
            workbench=opts.workbench if workbench is None else workbench,
            trim=opts.trim if trim is None else trim,
            handoff=handoff,
            store=opts.store,
            lease_ttl=lease_ttl,
        )
    except Exception as exc:
        raise explained(exc, opts) from exc


def _check_writable(directory: Path) -> None:
    import tempfile

    def leave(problem: OSError) -> Exit:
        return Exit(ExitCode.CONFIG, describe_os_error(problem, "the run dir", elsewhere="point -r elsewhere"))

    try:
        # 0700: transcripts hold every tool output the agent saw. Created so, never chmod-ed after (an existing
        # looser run dir is left alone; `flower doctor` reports it).
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise leave(exc) from exc
    try:
        # A page, written through: an empty file can still be created on a full disk.
        with tempfile.TemporaryFile(dir=directory, prefix=".flower-write-check-") as probe:
            probe.write(b"\0" * 4096)
            probe.flush()
            os.fsync(probe.fileno())
    except OSError as exc:  # named after the directory: the probe file's own name means nothing to a user
        raise leave(OSError(exc.errno, exc.strerror, str(directory))) from exc


def _explained(exc: Exception, db: Path | None) -> Exception:
    """``exc`` as a one-line `Exit` when a user can fix it; ``exc`` itself (a bug) otherwise."""

    known = explain(exc, store=db)
    return exc if known is None else Exit(*known)


def _sqlite_file(runtime: Runtime) -> Path | None:
    """The SQLite file under the runtime's layers, if that is its backend (SQLite's errors do not name it)."""
    backend = getattr(runtime.store, "backend", runtime.store)
    path = getattr(backend, "path", None)
    return path if isinstance(path, Path) else None


def write_stdout(text: str) -> None:
    """Write a command's result to stdout; a stdout that cannot take it is reported once, at exit (app.main)."""
    STDOUT.write(text)
    STDOUT.flush()


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


GATE_NOT_PASSED = "its gate did not pass in any round"


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
) -> None:
    """How ``go`` and ``run`` end a workflow that ran to its end: `finish` (notes, the answer, the closing line),
    then return when no step stopped it, else a one-line `Exit` naming the step and why (exit 1 unless the
    failure itself says otherwise: 3 credentials or a full disk, 4 network, 130 interrupted).

    ``unmet``: the command's reason for the stop when the workflow recorded none (go: the goal was not reached);
    the ``done`` event carries it too. ``not_passed``: said when the stopped step's last attempt ran to its end
    and nothing else explains it. ``culprit``: the session whose error decides the exit code (default: the
    stopped step's result). ``see``: where to look, added unless the reason already says ("look at").
    """
    failed = outcome.failed_at
    answer = outcome.answer
    aborted = outcome.aborted or (unmet if failed else None)
    finish(opts, view, sink, runtime, answer, failed_at=failed, aborted=aborted)
    if failed is None:
        return
    decisive = culprit if culprit is not None else answer
    code = exit_code_for(decisive) if decisive is not None else ExitCode.NOT_DONE
    reason = aborted or (answer.error if answer is not None else None)
    if not reason:
        reason = not_passed if answer is not None and answer.ok else "no result"
    if see and "look at" not in reason:
        reason += f"; {see}"
    raise Exit(code if code != ExitCode.DONE else ExitCode.NOT_DONE, f"stopped at step {failed!r}: {reason}")


def exit_code_for(result: StepResult) -> ExitCode:
    """0 done; 130 interrupted; 4 network not back in time; 3 credentials/configuration or the session taken
    over by another process; else 1."""
    if result.ok:
        return ExitCode.DONE
    if (result.error or "").startswith(Runtime.TAKEN_OVER):
        return ExitCode.CONFIG  # another process drives the session now: a person decides which one goes on

    if result.error in (Runtime.INTERRUPTED, Runtime.KILLED):
        return ExitCode.INTERRUPTED
    if (result.error or "").startswith(UNSTORED):
        return ExitCode.CONFIG  # the store must take the transcript (or be imported into) before a resume is whole
    if (result.error or "").startswith("network not back"):
        return ExitCode.OFFLINE

    if result.error and flower_resilience.classify(result.error) == "fatal" and _looks_like_credentials(result.error):
        return ExitCode.CONFIG
    if any(_looks_like_full_disk(error) for error in (result.error or "", *result.errors)):
        return ExitCode.CONFIG  # a person must free space before a rerun can work
    return ExitCode.NOT_DONE


def _looks_like_full_disk(error: str) -> bool:
    lowered = error.lower()
    return any(w in lowered for w in ("no space left on device", "database or disk is full", "disk quota exceeded"))


def _looks_like_credentials(error: str) -> bool:
    lowered = error.lower()
    return any(
        w in lowered
        for w in ("authentication", "api key", "unauthorized", "401", "403", "permission_error", "x-api-key")
    )
