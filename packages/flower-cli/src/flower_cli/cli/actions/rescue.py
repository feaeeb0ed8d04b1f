"""A command's hold on its `Runtime` while a run goes on: whatever ends the process — SIGTERM, SIGHUP, Ctrl-C,
a store or a disk that fails — no step vanishes from the manifest, and one line says what was kept and how to
go on."""

from __future__ import annotations

import contextlib
import signal
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import TypeVar

import anyio
import anyio.abc

from ..._shared.exits import Exit, ExitCode
from ...runtime import UNSTORED, Runtime, Terminated, describe_os_error, explain
from ...view import sanitize

__all__ = ["interrupted_line", "rescued", "run_rescued"]

T = TypeVar("T")
_RESCUED_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


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
        raise Exit(ExitCode.INTERRUPTED, interrupted_line(runtime, recorded=recorded, again=again)) from None
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


def interrupted_line(runtime: Runtime, *, recorded: str, again: str) -> str:
    """Ctrl-C's closing line: what was recorded where, the session, and the command that goes on (as a
    signal's line says them: a person who pressed Ctrl-C needs them just as much)."""
    kept, then = _kept_and_next(runtime, recorded=recorded, again=again)
    return f"interrupted; {kept}; to continue: {then}"


def _kept_and_next(runtime: Runtime, *, recorded: str, again: str) -> tuple[str, str]:
    """(what was recorded where, with the last step's session; the command that continues the run)."""
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
    return kept, again


def _say_terminated(runtime: Runtime, signum: int, *, recorded: str, again: str) -> None:
    """The one line a stopped run leaves: which signal, what was recorded where, the command that goes on."""
    try:
        name = signal.Signals(signum).name
    except ValueError:
        name = f"signal {signum}"
    kept, then = _kept_and_next(runtime, recorded=recorded, again=again)
    line = f"flower: stopped by {name}; {kept}; to continue: {then}"
    try:
        sys.stderr.write(sanitize(line) + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):  # a closed stderr must not keep the process from dying of the signal
        pass


def _explained(exc: Exception, db: Path | None) -> Exception:
    """``exc`` as a one-line `Exit` when a user can fix it; ``exc`` itself (a bug) otherwise."""

    known = explain(exc, store=db)
    return exc if known is None else Exit(*known)


def _sqlite_file(runtime: Runtime) -> Path | None:
    """The SQLite file under the runtime's layers, if that is its backend (SQLite's errors do not name it)."""
    backend = getattr(runtime.store, "backend", runtime.store)
    path = getattr(backend, "path", None)
    return path if isinstance(path, Path) else None
