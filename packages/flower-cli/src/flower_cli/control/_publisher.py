"""`RunPublisher`: a running run's side of the control surface — it writes every event the run prints into the
store's run log (with the run's head) and takes the run's inbox within a second.

Why a thread of its own: the run's event loop must not wait on the store. `publish` (called on the loop, for
each event) only folds the event into the head and queues it; the thread writes what is queued in one
transaction a tenth of a second after the first event of a batch, takes the inbox every half second, and writes
the head at least every `HEARTBEAT_S` so a reader can tell a live run from a dead one between steps. Store
trouble never stops the run: it is kept in ``errors`` and publishing goes on with the next batch.

Messages are handed to ``handle`` (on this thread): the command that runs the run decides what an answer, a
mail or a stop does there (a go run: answer the pending question, mail the coordinator, stop and record the
step). Each message's outcome is published as a ``control`` event (``payload.message`` is its id), which is what
``Control.wait_taken`` waits for.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from flower_stores import InboxMessage

from ._head import HeadFold
from ._info import HEARTBEAT_S

__all__ = ["MessageHandler", "PublishingSink", "RunPublisher"]

# What a message did: (taken, the note that says so — "answered q1", "no question waits").
MessageHandler = Callable[[InboxMessage], tuple[bool, str]]

_BATCH_S = 0.1
_INBOX_S = 0.5
_MAX_ERRORS = 20
_MAX_QUEUED = 10_000  # a store down for long: the oldest unwritten events go first (the transcript keeps all)


class RunPublisher:
    """Publishes ``run_id``'s events to ``log`` (a store with the run log and inbox) and takes its inbox.

    ``meta`` goes into the head as it is (command, workspace, host, pid, accepts…). Use it as a context manager,
    or `start` and `close`. ``handle``: what a message does (see the module docstring); without one, every
    message is refused with a note.
    """

    def __init__(
        self,
        log: Any,
        run_id: str,
        *,
        meta: dict[str, Any] | None = None,
        handle: MessageHandler | None = None,
        inbox_s: float = _INBOX_S,
    ) -> None:
        self.log = log
        self.run_id = run_id
        self.handle = handle
        self.inbox_s = inbox_s
        self.fold = HeadFold(meta=dict(meta or {}))
        self.errors: list[BaseException] = []
        self.dropped = 0  # events never written: the store failed for longer than the queue holds
        self.done_seen = False
        self._queue: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._closing = threading.Event()
        self._thread: threading.Thread | None = None
        self._written_at = 0.0

    # --- the run's side (any thread) ----------------------------------------------------------------

    def publish(self, event: dict[str, Any]) -> None:
        """Queue one event (a JSON object, as ``--json`` prints it); cheap, never blocks on the store."""
        with self._lock:
            self.fold.fold(event)
            self._queue.append(event)
            self.done_seen = self.done_seen or event.get("kind") == "done"
        self._wake.set()

    def sink(self, inner: Any) -> PublishingSink:
        """``inner`` (a command's event sink), publishing every event it is given as well."""
        return PublishingSink(inner, self)

    def finish(self, *, ok: bool, error: str = "") -> None:
        """The run is over: a ``done`` event unless the command published its own (``--json`` prints one)."""
        if not self.done_seen:
            self.publish({"kind": "done", "ok": ok, "text": "", "error": error or None, "cost_usd": self.fold.cost})

    # --- the thread ---------------------------------------------------------------------------------

    def start(self) -> RunPublisher:
        self._write()  # the run is listed (running) before its first step starts
        self._thread = threading.Thread(target=self._work, name="flower-publisher", daemon=True)
        self._thread.start()
        return self

    def close(self, timeout_s: float = 10.0) -> None:
        """Write what is queued and stop the thread (the run's last events are in the log when this returns)."""
        self._closing.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
            self._thread = None
        self._write()

    def __enter__(self) -> RunPublisher:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _work(self) -> None:
        taken_at = 0.0
        while not self._closing.is_set():
            if self._wake.wait(self.inbox_s):
                self._closing.wait(_BATCH_S)  # let the rest of a burst (a turn's events) join this batch
                self._wake.clear()
            now = time.monotonic()
            if self._queue or now - self._written_at >= HEARTBEAT_S:
                self._write()
            if now - taken_at >= self.inbox_s:
                taken_at = now
                self._take_inbox()

    def _write(self) -> None:
        with self._lock:
            batch, self._queue = self._queue, []
            head = self.fold.head()
        try:
            self.log.append_events(self.run_id, batch, head=head)
        except Exception as exc:  # noqa: BLE001 - a store that fails must not stop the run; kept, tried again next
            self._failed(exc)
            with self._lock:
                self._queue[:0] = batch  # kept for the next write, in order
                self.dropped += max(0, len(self._queue) - _MAX_QUEUED)
                del self._queue[:-_MAX_QUEUED]
        self._written_at = time.monotonic()

    def _take_inbox(self) -> None:
        try:
            messages = self.log.take_messages(self.run_id)
        except Exception as exc:  # noqa: BLE001 - as in _write: the run goes on
            self._failed(exc)
            return
        for message in messages:
            ok, note = self._handled(message)
            self.publish(
                {
                    "kind": "control",
                    "text": note,
                    "payload": {"action": message.kind, "message": message.id, "sender": message.sender, "ok": ok},
                }
            )

    def _handled(self, message: InboxMessage) -> tuple[bool, str]:
        if self.handle is None:
            return False, f"this run takes no {message.kind}"
        try:
            return self.handle(message)
        except Exception as exc:  # noqa: BLE001 - a message that cannot be handled is refused, the run goes on
            self._failed(exc)
            return False, f"could not take the {message.kind}: {type(exc).__name__}: {exc}"

    def _failed(self, exc: BaseException) -> None:
        if len(self.errors) < _MAX_ERRORS:
            self.errors.append(exc)


class PublishingSink:
    """A command's event sink that also publishes: every event, and every object a ``--json`` sink emits."""

    def __init__(self, inner: Any, publisher: RunPublisher) -> None:
        self.inner = inner
        self.publisher = publisher

    def __call__(self, event: Any) -> None:
        self.inner(event)
        self.publisher.publish(event.to_json())

    def emit(self, obj: dict[str, Any]) -> None:
        emit = getattr(self.inner, "emit", None)
        if callable(emit):
            emit(obj)
        self.publisher.publish(obj)

    def __getattr__(self, name: str) -> Any:
        # Everything else is the inner sink's (the refusal count the closing line reads, a renderer's methods).
        return getattr(self.inner, name)
