"""Each ``flower fleet`` command runs on a Temporal runtime of its own, gone before the command returns.

Why: the Temporal client is a Rust library whose runtime (a tokio thread pool) runs every call. The SDK's
default runtime is a module global, so it lived until the interpreter tore itself down — and a tokio thread
still letting go of the Python objects of a call that had just finished (it takes the GIL to drop them, a
moment after the awaiting coroutine got its answer) could then meet a finalizing interpreter: ``Fatal Python
error: PyGILState_Release`` and exit 134, after a command had already said it was done (temporalio/sdk-python
#300; measured: 8 of 20 ``flower fleet status no-such-run`` aborted).

So a command's client is built on a runtime made for it (`own_runtime`), and when the command's coroutine is
over the runtime is released and waited for: collected (the client's objects form cycles, so the collector
runs) once the tokio threads have let go of the last call's objects. The last reference going drops the Rust
runtime on this thread, which joins its worker threads: nothing of Temporal runs when the interpreter exits.

What keeps a runtime alive unseen: the Rust client holds the asyncio future of a failed call, whose error's
traceback reaches the call's frames and the client — so a failure told in one line first drops its
tracebacks (`forget_tracebacks`). Should a runtime still outlive its command (`DROP_TIMEOUT_S`), `leave` ends
the process without the interpreter's teardown: the fallback, not the fix.
"""

from __future__ import annotations

import asyncio
import gc
import os
import sys
import time
import traceback
import weakref
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, TypeVar

from temporalio.runtime import Runtime, TelemetryConfig

__all__ = ["DROP_TIMEOUT_S", "forget_tracebacks", "leave", "run_on_own_runtime"]

T = TypeVar("T")

# How long the tokio threads get to let go of the last call's objects; measured: under 0.2 s on a loaded
# 2-core machine. Past it the command ends anyway (the race is back, but nothing waits forever).
DROP_TIMEOUT_S = 10.0
_POLL_S = 0.01


def own_runtime() -> Runtime:
    """A runtime for one command: no worker heartbeats to the server (a client-only command has no worker; a
    `flower fleet worker` reports itself through its polls)."""
    return Runtime(telemetry=TelemetryConfig(), worker_heartbeat_interval=None)


def run_on_own_runtime(work: Callable[[Runtime], Coroutine[Any, Any, T]]) -> T:
    """``asyncio.run(work(runtime))`` on a runtime of its own, and that runtime gone (its threads joined) when
    this returns or raises."""
    runtime = own_runtime()
    gone = weakref.ref(runtime)
    try:
        return asyncio.run(work(runtime))
    except BaseException as exc:
        # A traceback keeps the frames of the coroutine, and their locals keep the client and its runtime.
        # Clearing them (the traceback still prints every line) is best effort: a comprehension's frame keeps
        # its closure. So a caller returns its known failures as values (after `forget_tracebacks`), and only a
        # bug arrives here.
        _clear_frames(exc)
        raise
    finally:
        del runtime
        if not _wait_until_gone(gone):
            _PINNED.append(True)


# Set when a runtime outlived its command (something the collector cannot see still held it): the process must
# then end without the interpreter's teardown, which its threads could crash (`leave`).
_PINNED: list[bool] = []


def leave(code: int) -> None:
    """End the command with ``code``: normally, or — when a runtime outlived it — at once after flushing, so its
    threads never meet a finalizing interpreter. The fallback for what `run_on_own_runtime` could not release;
    measured to be rare (see the module's docstring)."""
    if not _PINNED:
        return
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _chain(exc: BaseException | None) -> Iterator[BaseException]:
    """``exc`` and the errors it was raised from (or while handling), once each."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def _clear_frames(exc: BaseException | None) -> None:
    for error in _chain(exc):
        if error.__traceback__ is not None:
            traceback.clear_frames(error.__traceback__)


def forget_tracebacks(exc: BaseException) -> None:
    """Drop the tracebacks of ``exc`` and of the errors in its chain: for a failure told in one line.

    Why it matters: the Rust client keeps the asyncio future of a failed call (and so its error) in a task
    on the runtime, and the error's traceback reaches the frames of the call, whose ``self`` is the client:
    a loop through Rust that the collector cannot see, which would keep the runtime alive for good.
    """
    for error in _chain(exc):
        if error.__traceback__ is not None:
            traceback.clear_frames(error.__traceback__)
            error.__traceback__ = None


def _wait_until_gone(gone: weakref.ref[Runtime]) -> bool:
    """Collect until the runtime is gone (True), or `DROP_TIMEOUT_S` passed (False)."""
    deadline = time.monotonic() + DROP_TIMEOUT_S
    while True:
        gc.collect()
        if gone() is None:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(_POLL_S)  # a tokio thread is still dropping the last call's objects
