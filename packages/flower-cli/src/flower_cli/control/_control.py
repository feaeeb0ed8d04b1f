"""`Control`: list a store's runs, follow their events, answer, mail and stop them — from any process.

What ``flower status / watch / answer / mail / stop`` do, as a Python API another program can drive a run with
(a chat bot, an editor plugin, the ``flower ui`` page). It reads and writes only the store (flower-stores'
`RunEventLog` and `RunInbox`): a local run on this machine and a run on another machine that shares a
PostgreSQL store are the same to it. The run itself picks its messages up within a second (`RunPublisher`).
"""

from __future__ import annotations

import getpass
import socket
import time
from collections.abc import AsyncIterator
from typing import Any

from flower_stores import InboxMessage, RunEvent, follow_events

from ._info import RunInfo

__all__ = ["Control", "ControlError", "default_sender"]


class ControlError(Exception):
    """A run cannot be found, chosen or told this (one line that says what to do)."""


def default_sender() -> str:
    """Who is sending, as the run's Q&A log records it: ``user@host``."""
    try:
        user = getpass.getuser()
    except Exception:  # noqa: BLE001 - no user name (a container without one): the host still says where
        user = "someone"
    return f"{user}@{socket.gethostname()}"


class Control:
    """The runs of one store (anything with the run log and inbox: `SqliteSessionStore`, `PostgresSessionStore`,
    the layers over them). Every call is blocking and short, except `follow` (async). The store stays the
    caller's to close."""

    def __init__(self, store: Any) -> None:
        for method in ("run_heads", "run_head", "read_events", "live_runs", "post_message"):
            if not callable(getattr(store, method, None)):
                raise ControlError(f"{store!r} keeps no run log; use a flower store (SQLite or PostgreSQL)")
        self.store = store

    # --- reading ------------------------------------------------------------------------------------

    def runs(self) -> list[RunInfo]:
        """Every run that published to this store, newest first."""
        live = self.store.live_runs()
        return [
            RunInfo.of(
                h.run_id,
                h.head,
                created_ms=h.created_ms,
                updated_ms=h.updated_ms,
                last_seq=h.last_seq,
                leased=h.run_id in live,
            )
            for h in self.store.run_heads()
        ]

    def run(self, run_id: str) -> RunInfo:
        """The run ``run_id`` (or the one run whose id starts with it)."""
        head = self.store.run_head(run_id)
        if head is None:
            matches = [r for r in self.runs() if r.run_id.startswith(run_id)]
            if len(matches) == 1:
                return matches[0]
            if matches:
                raise ControlError(f"{run_id!r} starts {len(matches)} run ids ({_ids(matches)}); give more of it")
            raise ControlError(f"no run {run_id!r} in this store; `flower status` lists its runs")
        return RunInfo.of(
            head.run_id,
            head.head,
            created_ms=head.created_ms,
            updated_ms=head.updated_ms,
            last_seq=head.last_seq,
            leased=head.run_id in self.store.live_runs(),
        )

    def pick(self, run_id: str | None = None) -> RunInfo:
        """``run_id``'s run, or — without one — the one run that is running (a clear error when none or several)."""
        if run_id:
            return self.run(run_id)
        live = [r for r in self.runs() if r.live]
        if len(live) == 1:
            return live[0]
        if not live:
            raise ControlError("no run is running in this store; give a RUN id (`flower status` lists the runs)")
        raise ControlError(f"{len(live)} runs are running ({_ids(live)}); say which: give its RUN id")

    def events(self, run_id: str, *, after: int = 0, limit: int = 1000) -> list[RunEvent]:
        """The run's events after ``after`` (a seq), oldest first."""
        return list(self.store.read_events(run_id, after=after, limit=limit))

    async def follow(self, run_id: str, *, after: int = 0, poll_s: float = 0.25) -> AsyncIterator[RunEvent]:
        """The run's events after ``after`` (a seq) as they come, until its ``done`` event, or until no process drives
        it any more and its log has nothing new. Leaving the loop (Ctrl-C in ``flower watch``) leaves the run alone."""
        async for event in follow_events(
            self.store,
            run_id,
            after=after,
            poll_s=poll_s,
            until=lambda e: e.event.get("kind") == "done",
            gone=lambda: not self.run(run_id).live,
        ):
            yield event

    # --- telling ------------------------------------------------------------------------------------

    def answer(self, run_id: str | None, text: str, *, question_id: str = "", sender: str = "") -> InboxMessage:
        """Answer the question ``run_id``'s run waits on (or ``question_id``); ControlError when it waits on none."""
        run = self.pick(run_id)
        self._check_accepts(run, "answer")
        if not text.strip():
            raise ControlError("an empty answer says nothing; give the answer's text")
        if run.state != "waiting" and not question_id:
            raise ControlError(
                f"run {run.run_id} waits on no question now (it is {run.state}); `flower mail` tells it something"
            )
        return self._post(run, "answer", text, sender, question_id or run.question_id)

    def mail(self, run_id: str | None, text: str, *, sender: str = "") -> InboxMessage:
        """Mail the run's coordinator (appended to its brief, read at its next inbox check)."""
        run = self.pick(run_id)
        self._check_accepts(run, "mail")
        if not text.strip():
            raise ControlError("an empty mail says nothing; give its text")
        return self._post(run, "mail", text, sender)

    def stop(self, run_id: str | None, *, reason: str = "", sender: str = "") -> InboxMessage:
        """Stop the run: its step is recorded, and ``flower`` in its workspace wakes it later."""
        run = self.pick(run_id)
        self._check_accepts(run, "stop")
        return self._post(run, "stop", reason, sender)

    def wait_taken(
        self, message: InboxMessage, *, timeout_s: float = 10.0, poll_s: float = 0.1
    ) -> dict[str, Any] | None:
        """The run's acknowledgement of ``message`` (its ``control`` event's payload: ``ok``, ``sender``…, and its text
        as ``note``), or None if the run did
        not take it within ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        after = 0
        while True:
            for event in self.events(message.run_id, after=after):
                after = event.seq
                payload = event.event.get("payload")
                if (
                    event.event.get("kind") == "control"
                    and isinstance(payload, dict)
                    and payload.get("message") == message.id
                ):
                    return {**payload, "note": str(event.event.get("text") or "")}
            if time.monotonic() >= deadline:
                return None
            time.sleep(poll_s)

    def _check_accepts(self, run: RunInfo, kind: str) -> None:
        if not run.live:
            raise ControlError(f"run {run.run_id} is {run.state}; only a running run takes {kind}s")
        if run.accepts and kind not in run.accepts:
            what = f"a `{run.command}` run" if run.command else "this run"
            raise ControlError(f"run {run.run_id} takes no {kind} ({what} takes {', '.join(run.accepts)})")

    def _post(self, run: RunInfo, kind: str, text: str, sender: str, question: str = "") -> InboxMessage:
        message: InboxMessage = self.store.post_message(
            run.run_id, kind, text, sender=sender or default_sender(), question=question
        )
        return message


def _ids(runs: list[RunInfo]) -> str:
    shown = ", ".join(r.run_id for r in runs[:5])
    return shown + (f", … {len(runs) - 5} more" if len(runs) > 5 else "")
