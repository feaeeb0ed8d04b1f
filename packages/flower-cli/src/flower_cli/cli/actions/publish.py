"""A running command's side of the control surface: its events published to the store's run log, and what an
answer, a mail or a stop sent from another terminal (``flower answer/mail/stop``) does to it.

``go``, ``run`` and ``once`` open a `Publishing` around their run: its ``sink`` is the command's own sink that
also publishes every event, `main` runs the command's work in a cancel scope so a stop can end it, and the
messages are handled here — a stop the same for every command (the step in flight recorded with who stopped
it, the work cancelled, the command ending with exit 1 and the way to wake it), an answer and a mail through
the command's human channel when it has one.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import anyio.from_thread
import anyio.lowlevel

from ..._shared.exits import Exit, ExitCode
from ...control import RunPublisher

if TYPE_CHECKING:
    from flower_stores import InboxMessage

    from ...go import HumanChannel
    from ...runtime import Runtime
    from .._global_options import GlobalOptions

__all__ = ["Publishing", "keeps_a_run_log", "publishing"]

T = TypeVar("T")


class Publishing:
    """One command's publisher (None when its store keeps no run log: a user's own store), its sink, and the
    stop that may end it."""

    def __init__(self, runtime: Runtime, sink: Any, channel: HumanChannel | None) -> None:
        self.runtime = runtime
        self.channel = channel
        self.stopped_by = ""
        self.publisher: RunPublisher | None = None
        self.sink = sink
        self._token: anyio.lowlevel.EventLoopToken | None = None
        self._scope: anyio.CancelScope | None = None

    async def main(self, work: Callable[[], Awaitable[T]]) -> T | None:
        """``work()`` on the event loop, cancellable by a stop; None when a stop ended it."""
        self._token = anyio.lowlevel.current_token()
        with anyio.CancelScope() as scope:
            self._scope = scope
            return await work()
        return None

    def handle(self, message: InboxMessage) -> tuple[bool, str]:
        """What ``message`` does to this run (on the publisher's thread): (taken, what happened)."""
        if message.kind == "stop":
            return self._stop(message)
        channel = self.channel
        if channel is None:
            return False, f"this run has no one to give a {message.kind} to"
        if message.kind == "mail":
            mail = channel.send(message.text, by=message.sender)
            return (True, f"mail {mail.id} queued for the coordinator") if mail else (False, "the mail was empty")
        pending = [item.id for item in channel.pending()]
        target = message.question or (pending[0] if pending else "")
        if not target:
            return False, "no question waits for an answer"
        if channel.answer(target, message.text, by=message.sender):
            return True, f"answered {target}"
        return False, f"{target} is no longer waiting for an answer"

    def _stop(self, message: InboxMessage) -> tuple[bool, str]:
        token, scope = self._token, self._scope
        if token is None or scope is None:
            return False, "the run is not running yet; send the stop again in a moment"
        self.stopped_by = message.sender or "someone"
        reason = f"stopped by {self.stopped_by} (flower stop)" + (
            f": {message.text.strip()}" if message.text.strip() else ""
        )

        def stop() -> None:
            self.runtime.rescue(reason)  # the step in flight is recorded with who stopped it …
            scope.cancel()  # … and the work ends as a Ctrl-C quit ends it (the harness closed, the lease released)

        try:
            anyio.from_thread.run_sync(stop, token=token)
        except RuntimeError:  # the loop is gone: the run ended by itself meanwhile
            return False, "the run had already ended"
        return True, "stopping: the step in flight is recorded"

    def check_stopped(self, workspace: Any) -> None:
        """Exit 1 saying who stopped the run and how to wake it, when a stop ended it."""
        if self.stopped_by:
            last = self.runtime.results[-1].step if self.runtime.results else "none"
            raise Exit(
                ExitCode.NOT_DONE,
                f"stopped by {self.stopped_by} (flower stop); the step {last!r} is recorded in "
                f"{self.runtime.manifest_path}; run `flower` in {workspace} to wake it",
            )


def _meta(g: GlobalOptions, runtime: Runtime, command: str, accepts: tuple[str, ...]) -> dict[str, Any]:
    return {
        "command": command,
        "workspace": str(runtime.workspace),
        "run_dir": str(runtime.run_dir),
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "accepts": list(accepts),
        "json": g.json,
    }


def keeps_a_run_log(store: Any) -> bool:
    """Whether ``store`` keeps runs' events and inboxes (flower's stores and the layers over them do)."""
    return callable(getattr(store, "append_events", None)) and callable(getattr(store, "take_messages", None))


@contextlib.contextmanager
def publishing(
    g: GlobalOptions, runtime: Runtime, sink: Any, *, command: str, channel: HumanChannel | None = None
) -> Iterator[Publishing]:
    """Publish the command's run while the block runs; the run's ``done`` event (if the command printed none)
    when it ends, however it ends."""
    pub = Publishing(runtime, sink, channel)
    store = runtime.store
    if not keeps_a_run_log(store):
        yield pub  # a store without a run log (a user's own): the run works as before, unseen from elsewhere
        return
    accepts = ("answer", "mail", "stop") if channel is not None else ("stop",)
    publisher = RunPublisher(store, runtime.run_id, meta=_meta(g, runtime, command, accepts), handle=pub.handle)
    pub.publisher, pub.sink = publisher, publisher.sink(sink)
    publisher.start()
    try:
        yield pub
    except Exit as stop:
        publisher.finish(ok=stop.code == ExitCode.DONE, error=stop.message)
        raise
    except BaseException as exc:
        publisher.finish(ok=False, error=type(exc).__name__)
        raise
    else:
        publisher.finish(ok=True)
    finally:
        publisher.close()
        if publisher.errors and g.verbose:
            sys.stderr.write(
                f"  ! publishing this run's events failed {len(publisher.errors)} times: {publisher.errors[0]}\n"
            )
