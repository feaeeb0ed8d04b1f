"""The human channel: an in-process MCP server ``human`` through which a run asks the person and reads mail.

Two tools:

* ``mcp__human__ask(question, options?)`` blocks until the person answers, declines, or the time runs out.
  ``max_asks`` caps the questions (None = no cap, 0 = none); ``timeout_s`` is how long to wait (None =
  forever, <= 0 = nobody is asked at all: the question falls through at once and the model is told to make
  its own call and record the assumption).
* ``mcp__human__inbox()`` returns at once with what the person typed while the run worked (mail), which was
  already appended to the brief when it arrived.

The person's side (a terminal's stdin thread, a ``--json`` reader, a test) calls `HumanChannel.answer`,
`decline` and `send` from **any thread** while the tool handler waits inside the SDK's event loop. Every
question, answer and mail goes to the Q&A log (``notes/qa-log.md``), never into a model's context.

Events (kind ``"ask"``) go to ``on_event``: questions carry ``payload["kind"] == "question"`` and a state
(asked / answered / declined / timeout / over_budget / invalid / cancelled), mail carries ``"mail"`` and
queued / delivered. Counting and logging: an empty question or one over the quota does not use up the quota;
questions and mail have their own numbering (q1, q2… / m1, m2…); mail is logged when it is queued and again
when it is delivered; a question that timed out still shows its text.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio
import anyio.from_thread
import anyio.lowlevel
from claude_agent_sdk import create_sdk_mcp_server, tool

from ..runtime import Event
from ._brief import RUNNING_LABEL, Brief

__all__ = [
    "DECLINED_TEXT",
    "INVALID_TEXT",
    "OVER_BUDGET_TEXT",
    "TIMEOUT_TEXT",
    "Ask",
    "AskState",
    "HumanChannel",
    "Mail",
]

AskState = Literal["pending", "answered", "declined", "timeout", "over_budget", "invalid", "cancelled"]

_RECORD = (
    'record the assumption you made (in the brief\'s "Unknowns and assumptions" if you are writing the brief, '
    "otherwise in your notes or your reply)"
)
INVALID_TEXT = "The question was empty. Write the question out in full, then ask again."
OVER_BUDGET_TEXT = (
    f"You have used all your questions; do not ask again. Make your own call on what is still uncertain and {_RECORD}, "
    "then carry on."
)
TIMEOUT_TEXT = (
    f"Nobody answered. Make your own call and carry on, and {_RECORD}. Do not ask the same question again and do "
    "not wait for an answer."
)
DECLINED_TEXT = f"The person skipped this question. Make your own call and carry on, and {_RECORD}."
_EMPTY_INBOX = "The inbox is empty. Carry on with your work."

_ASK_DESCRIPTION = (
    "Ask the person who gave you this task a question and wait for the answer. Use it only for what you "
    "cannot sensibly decide yourself (what they want, a choice between real alternatives); when there are "
    "alternatives, list them in `options` so they can pick one. Questions are limited and may go unanswered; "
    "the reply then tells you to decide yourself."
)
_INBOX_DESCRIPTION = (
    "Read what the person sent while you were working (additions to the requirements). Returns at once; "
    "check it at natural checkpoints, for example after finishing a piece of work."
)
_ASK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "question": {"type": "string", "description": "The question, complete and self-contained."},
        "options": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Optional choices the person can pick from by number.",
        },
    },
    "required": ["question"],
}
_HARNESS_MAX_TIMEOUT_MS = 2_147_483_647  # Claude Code clamps MCP tool timeouts to this
_LOG_HEADER = (
    "# Questions and answers\n\n"
    "> Appended automatically while runs work. A record for people only: it never enters a model's context.\n"
)


def _clock(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at))


def _indented(text: str, prefix: str = "    ") -> str:
    first, *rest = text.splitlines() or [""]
    return "\n".join([first, *(f"{prefix}{line}" if line.strip() else "" for line in rest)])


@dataclass
class Ask:
    """One question put through the channel, and how it ended."""

    id: str
    question: str
    options: tuple[str, ...] = ()
    asked_at: float = 0.0
    state: AskState = "pending"
    answer: str = ""  # the answer, or the reason given when declined
    settled_at: float = 0.0
    by: str = ""  # who answered, when not the terminal the run runs in (``flower answer`` from elsewhere)


@dataclass
class Mail:
    """Something the person said to a running run without being asked."""

    id: str
    text: str
    sent_at: float = 0.0
    delivered: bool = False
    delivered_at: float = 0.0
    amended: str = ""  # the brief it was appended to ("" = not persisted)
    by: str = ""  # who sent it, when not the terminal the run runs in (``flower mail`` from elsewhere)


@dataclass
class _Waiter:
    event: anyio.Event
    token: anyio.lowlevel.EventLoopToken
    thread: int = field(default_factory=threading.get_ident)


def _wake(waiter: _Waiter) -> None:
    try:
        anyio.from_thread.run_sync(waiter.event.set, token=waiter.token)
    except RuntimeError:
        pass  # the event loop is gone, and with it the waiting tool call


class HumanChannel:
    ask_tool_name = "ask"
    inbox_tool_name = "inbox"
    server_name = "human"

    def __init__(
        self,
        *,
        on_event: Callable[[Event], Any] | None = None,
        max_asks: int | None = None,
        timeout_s: float | None = 1800.0,
        log_path: Path | str | None = None,
        amend_path: Path | str | None = None,
        over_budget_text: str = OVER_BUDGET_TEXT,
        timeout_text: str = TIMEOUT_TEXT,
        declined_text: str = DECLINED_TEXT,
    ) -> None:
        if max_asks is not None and max_asks < 0:
            raise ValueError(f"max_asks must be None (no cap) or at least 0, not {max_asks}")
        self.on_event = on_event
        self.max_asks = max_asks
        self.timeout_s = timeout_s
        self.log_path = Path(log_path) if log_path is not None else None
        self.amend_path = Path(amend_path) if amend_path is not None else None
        self.over_budget_text = over_budget_text
        self.timeout_text = timeout_text
        self.declined_text = declined_text
        self.asks: list[Ask] = []
        self.mail: list[Mail] = []
        self.ui_errors: list[BaseException] = []
        self._lock = threading.Lock()
        self._log_lock = threading.Lock()
        self._pending: dict[str, tuple[Ask, _Waiter]] = {}
        self._questions = 0  # id counters, one each: q1, q2… and m1, m2…
        self._letters = 0
        self._counted = 0  # questions that used the quota (not invalid or over-quota ones)
        self._deaf: str | None = None  # set by stop_listening(): nobody can answer any more
        self._server: Any | None = None

    # --- the Protocol the workflow uses -------------------------------------------------------------

    @property
    def ask_tool(self) -> str:
        return f"mcp__{self.server_name}__{self.ask_tool_name}"

    @property
    def inbox_tool(self) -> str:
        return f"mcp__{self.server_name}__{self.inbox_tool_name}"

    def mcp_servers(self) -> dict[str, Any]:
        """``{"human": <in-process MCP server>}`` for ``ClaudeAgentOptions.mcp_servers`` (built once)."""
        if self._server is None:
            self._server = self._build_server()
        return {self.server_name: self._server}

    def _build_server(self) -> Any:
        @tool(self.ask_tool_name, _ASK_DESCRIPTION, _ASK_SCHEMA)
        async def ask(args: dict[str, Any]) -> dict[str, Any]:
            options = args.get("options")
            reply = await self.ask(str(args.get("question") or ""), options if isinstance(options, list) else None)
            return {"content": [{"type": "text", "text": reply}]}

        @tool(self.inbox_tool_name, _INBOX_DESCRIPTION, {"type": "object", "properties": {}})
        async def inbox(args: dict[str, Any]) -> dict[str, Any]:
            return {"content": [{"type": "text", "text": self.inbox()}]}

        config: dict[str, Any] = dict(create_sdk_mcp_server(self.server_name, tools=[ask, inbox]))
        # Claude Code settings for this server (2.1.332; the SDK passes every key but ``instance`` through):
        # - alwaysLoad: the two tools are in the prompt, not deferred behind ToolSearch (a deferred tool
        #   costs the model a search round before it can ask, and a direct call fails validation);
        # - disableAutoBackground: a call waiting on a person must not be moved to a background task after
        #   the harness's auto-background delay — the model would carry on without the answer;
        # - timeout: the harness's hard per-call limit, set to its maximum; the channel's own timeout_s
        #   decides how long a question waits.
        config.update(alwaysLoad=True, disableAutoBackground=True, timeout=_HARNESS_MAX_TIMEOUT_MS)
        return config

    # --- state --------------------------------------------------------------------------------------

    @property
    def remaining(self) -> int:
        """Questions left: -1 when there is no cap."""
        if self.max_asks is None:
            return -1
        with self._lock:
            return max(0, self.max_asks - self._counted)

    def pending(self) -> list[Ask]:
        """Questions waiting for the person, oldest first."""
        with self._lock:
            return [item for item, _ in self._pending.values()]

    @property
    def listening(self) -> bool:
        return self._deaf is None

    # --- asking (the model's side, inside the SDK's event loop) ---------------------------------------

    async def ask(self, question: str, options: Sequence[str] | None = None) -> str:
        """Put a question to the person and return the text the model is given back."""
        text = (question or "").strip()
        choices = tuple(o.strip() for o in options or () if isinstance(o, str) and o.strip())
        waiter: _Waiter | None = None
        with self._lock:
            self._questions += 1
            item = Ask(f"q{self._questions}", text, choices, time.time())
            self.asks.append(item)
            if not text:
                item.state = "invalid"
            elif self.max_asks is not None and self._counted >= self.max_asks:
                item.state = "over_budget"
            else:
                self._counted += 1
                if self._deaf is not None or (self.timeout_s is not None and self.timeout_s <= 0):
                    item.state = "timeout"
                    item.answer = self._deaf or ""
                else:
                    waiter = _Waiter(anyio.Event(), anyio.lowlevel.current_token())
                    self._pending[item.id] = (item, waiter)
            if waiter is None:
                item.settled_at = item.asked_at
        if waiter is None:
            self._finished(item)
            return self._reply(item)

        self._emit_question(item, "asked")
        try:
            with anyio.move_on_after(self.timeout_s):
                await waiter.event.wait()
        except BaseException:
            # Cancelled (the step ended or was interrupted): nobody should keep answering this question.
            with self._lock:
                if self._pending.pop(item.id, None) is not None:
                    item.state, item.settled_at = "cancelled", time.time()
            if item.state == "cancelled":
                self._finished(item)
            raise
        with self._lock:
            if self._pending.pop(item.id, None) is not None:
                item.state, item.settled_at = "timeout", time.time()
        self._finished(item)
        return self._reply(item)

    def _reply(self, item: Ask) -> str:
        if item.state == "answered":
            return f"The person answered:\n{item.answer}"
        if item.state == "declined":
            return self.declined_text + (f" (They said: {item.answer})" if item.answer else "")
        if item.state == "over_budget":
            return self.over_budget_text
        if item.state == "invalid":
            return INVALID_TEXT
        return self.timeout_text

    def log_settled(self, question: str, state: AskState, answer: str = "", *, asked_at: float | None = None) -> None:
        """Write a question that was settled elsewhere to the Q&A log, as `ask` does for its own: a fleet's
        question, answered (or timed out) while no process waited on it. It does not count against the quota."""
        with self._lock:
            self._questions += 1
            item = Ask(f"q{self._questions}", question.strip(), (), asked_at or time.time())
        item.state, item.answer, item.settled_at = state, answer.strip(), time.time()
        self._log_question(item)

    def _finished(self, item: Ask) -> None:
        self._log_question(item)
        self._emit_question(item, item.state)

    # --- answering (the person's side, any thread) ----------------------------------------------------

    def answer(self, ask_id: str, text: str, *, by: str = "") -> bool:
        """Answer a pending question (thread-safe). False when it is not pending (any more). ``by``: who answered,
        for the Q&A log, when it is not the run's own terminal."""
        body = text.strip()
        if not body:
            return self.decline(ask_id)
        return self._settle(ask_id, "answered", body, by)

    def decline(self, ask_id: str, reason: str = "") -> bool:
        """Skip a pending question; the model is told to decide itself. False when it is not pending."""
        return self._settle(ask_id, "declined", reason.strip())

    def stop_listening(self, reason: str = "input closed") -> None:
        """Nobody can answer any more (stdin reached its end): decline what is pending, and let every later
        question fall through at once instead of waiting out the timeout."""
        self._deaf = reason
        for item in self.pending():
            self.decline(item.id, reason)

    def _settle(self, ask_id: str, state: AskState, text: str, by: str = "") -> bool:
        with self._lock:
            entry = self._pending.pop(ask_id, None)
            if entry is None:
                return False
            item, waiter = entry
            item.state, item.answer, item.settled_at, item.by = state, text, time.time(), by
        if threading.get_ident() == waiter.thread:
            waiter.event.set()
        else:
            # Woken from a helper thread so the caller never blocks on the event loop: a terminal thread
            # that answers while holding its output lock must not wait for a loop that wants that lock.
            threading.Thread(target=_wake, args=(waiter,), name="flower-human-wake", daemon=True).start()
        return True

    # --- mail ---------------------------------------------------------------------------------------

    def send(self, text: str, *, by: str = "") -> Mail | None:
        """Queue a message for the run (thread-safe): appended to the brief now, delivered by ``inbox``. ``by``:
        who sent it, for the Q&A log, when it is not the run's own terminal."""
        body = text.strip()
        if not body:
            return None
        with self._lock:
            self._letters += 1
            mail = Mail(f"m{self._letters}", body, time.time(), by=by)
            self.mail.append(mail)
        if self.amend(body):
            mail.amended = str(self.amend_path)
        sender = f" · from {by}" if by else ""
        self._log(f"- **Mail** ({mail.id} · queued {_clock(mail.sent_at)}{sender}) {_indented(body)}")
        self._emit_mail(mail, "queued")
        return mail

    def amend(self, text: str, label: str = RUNNING_LABEL) -> bool:
        """Append ``text`` to the brief (``amend_path``) under a dated heading; False when not written."""
        if self.amend_path is None:
            return False
        return Brief.amend(self.amend_path, text, label)

    def inbox(self) -> str:
        """Take every undelivered mail (the ``inbox`` tool): the text the model is given."""
        with self._lock:
            fresh = [m for m in self.mail if not m.delivered]
            now = time.time()
            for mail in fresh:
                mail.delivered, mail.delivered_at = True, now
        if not fresh:
            return _EMPTY_INBOX
        for mail in fresh:
            self._log(f"- **Mail** ({mail.id} · delivered {_clock(mail.delivered_at)})")
            self._emit_mail(mail, "delivered")
        lines = ["The person sent this while you were working (oldest first):"]
        lines += [f"{i}. {_indented(m.text, '   ')}" for i, m in enumerate(fresh, 1)]
        kept = {m.amended for m in fresh if m.amended}
        if kept and all(m.amended for m in fresh):
            lines += ["", f"It is already appended to {', '.join(sorted(kept))}; treat it as part of the requirements."]
        else:
            lines += [
                "",
                "Note: this was NOT saved anywhere. If it matters beyond this session, write it down yourself.",
            ]
        return "\n".join(lines)

    # --- events and the log -------------------------------------------------------------------------

    def _emit(self, event: Event) -> None:
        handler = self.on_event
        if handler is None:
            return
        try:
            handler(event)
        except Exception as exc:  # noqa: BLE001 - a broken UI must not break the run's question
            self.ui_errors.append(exc)

    def _emit_question(self, item: Ask, state: str) -> None:
        payload: dict[str, Any] = {
            "kind": "question",
            "state": state,
            "id": item.id,
            "question": item.question,
            "options": list(item.options),
            "remaining": self.remaining,
        }
        if state == "answered":
            payload["answer"] = item.answer
            if item.by:
                payload["by"] = item.by
        elif item.answer:
            payload["reason"] = item.answer
        self._emit(Event("ask", item.question, payload=payload))

    def _emit_mail(self, mail: Mail, state: str) -> None:
        self._emit(
            Event("ask", mail.text, payload={"kind": "mail", "state": state, "id": mail.id, "amended": mail.amended})
        )

    def _log_question(self, item: Ask) -> None:
        lines = [f"- **Q** ({item.id} · {_clock(item.asked_at)}) {_indented(item.question or '(empty question)')}"]
        if item.options:
            lines.append(f"  - options: {' / '.join(item.options)}")
        answer = f" {_indented(item.answer)}" if item.answer else ""
        by = f" by {item.by}" if item.by else ""
        lines.append(f"  - **A** [{item.state.replace('_', ' ')}{by}]{answer}")
        self._log("\n".join(lines))

    def _log(self, entry: str) -> None:
        if self.log_path is None:
            return
        with self._log_lock:
            try:
                self.log_path.parent.mkdir(parents=True, exist_ok=True)
                new = not self.log_path.exists() or self.log_path.stat().st_size == 0
                # 0600 from the start: the person's answers may hold what they would not show others.
                fd = os.open(self.log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
                with open(fd, "a", encoding="utf-8") as handle:
                    handle.write((_LOG_HEADER + "\n" if new else "") + entry + "\n")
            except OSError as exc:
                self.ui_errors.append(exc)  # the record is for people; a full disk must not stop the run
