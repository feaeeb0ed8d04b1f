"""One step's handoffs, decided in one place: the main thread's context watermark, the warning near the
threshold, whether and how to hand off when a stream of the step ends (`HandoffLoop.after`, a `Decision`), the
document (written by the same session, or built mechanically when that cannot work) and the takeover by a fresh
session.

The Runtime owns the SDK and asks; the loop answers. When a stream has ended the Runtime asks `after` what to
do: go on (no handoff), write (run one quiet round on the old session with the decision's prompt), rebuild (the
context overflowed: no round can run) or stop (the generation brake). It hands the writing round's outcome to
`document`, and the document to `take_over`, which returns the successor's first message. The pieces that do
not depend on a running step (the window, the policy, the document, saving it, recognising an overflow) live in
the other modules of this package.

Where a step may stop for a handoff: only at a clean boundary of the main thread — a tool-result message that
leaves no tool call of the main thread open (the model is about to be asked again, and nothing is cut in
half), or the end of a turn while background workers are still live (the step is not over: a worker's
notification would wake it). A turn that ends with no live worker ends the step, so there is nothing to hand
over. While workers are live a handoff would end them with the old session's process, so it waits for them,
unless the context is already past the middle of the headroom.

Claude Code sends the next request the moment a tool result is in, so a step stopped at that boundary has
already paid for one more request at full context. `HandoffLoop.stop_hook` prevents it: a PostToolUse hook
that, when that result will be the boundary, tells the harness not to continue (the turn ends there, and its
end is mirrored to the store with the result).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import anyio
from claude_agent_sdk import HookMatcher

from .._events import Event
from ._document import Handoff, degraded, handoff_prompt
from ._overflow import OVERFLOW_WHY, is_overflow, overflow_limit
from ._policy import HandoffPolicy
from ._save import save
from ._window import record_overflow

if TYPE_CHECKING:
    from claude_agent_sdk import HookJSONOutput

__all__ = ["Decision", "HandoffLoop", "QuietRound"]

# Tools whose call starts a worker: stopping right after one would end the turn that just dispatched it.
_DISPATCH_TOOLS = frozenset({"Agent", "Task"})

EventSink = Callable[[Event], Any]


@dataclass(frozen=True)
class Decision:
    """What the step does next, as the handoff loop decides when a stream has ended (`HandoffLoop.after`).

    - ``go_on``: no handoff; the step goes on or ends for its own reasons (an interrupt, the end of its turn).
    - ``write``: hand off; the old session writes its handoff in one quiet round, asked with ``prompt``.
    - ``rebuild``: hand off, but the context overflowed (``overflow``: the errors that said so) or cannot fit its
      load budget (``reason``: by how much), so no round can run; the document is built mechanically.
    - ``stop``: due again after ``max_generations`` handoffs; the step fails with ``reason``.

    ``stopped``: the live workers a handoff ends with the old session's process.
    """

    action: Literal["go_on", "write", "rebuild", "stop"]
    prompt: str = ""
    reason: str = ""
    overflow: tuple[str | None, ...] = ()
    stopped: tuple[str, ...] = ()

    @property
    def hands_off(self) -> bool:
        return self.action in ("write", "rebuild")


@dataclass(frozen=True)
class QuietRound:
    """What one round on the old session returned: its final text, or the error that ended it."""

    text: str
    error: str | None = None

    @classmethod
    def failed(cls, exc: BaseException) -> QuietRound:
        """A round that raised instead of returning: its error is the exception."""
        return cls("", f"{type(exc).__name__}: {exc}")


def _k(tokens: int) -> str:
    return f"{tokens / 1000:.1f}K"


class HandoffLoop:
    """The handoff state of one ``Runtime.run``: reset for every generation, counted over the whole step."""

    def __init__(
        self,
        policy: HandoffPolicy,
        *,
        step: str,
        original_prompt: str,
        save_dir: Path,
        emit: EventSink,
        model: str | None = None,
    ) -> None:
        self.policy = policy.resolved(model=model)
        self.window = self.policy.window_tokens
        self.at = self.policy.at
        self.warn_at = self.policy.warn_at
        # Past this point a handoff no longer waits for live workers: the next turn could overflow.
        self.hard_at = self.at + max(0, self.window - self.at) // 2
        self.step = step
        self.original_prompt = original_prompt
        self.save_dir = save_dir
        self.model = model
        self._emit = emit
        self.generations = 0
        self.retired: list[str] = []
        self.context = 0
        self._warned = False
        self._open_calls: set[str] = set()
        self._stopped = False  # the stop hook ended the current turn: its end is the boundary

    # --- watching the main thread ------------------------------------------------------------------

    def observe(self, events: list[Event], *, live_workers: bool) -> bool:
        """Feed one message's events; True when the step should stop here for a handoff."""
        boundary = False
        for event in events:
            if event.subagent:
                continue
            p = event.payload
            context = p.get("context")
            if isinstance(context, int) and context > self.context:
                self.context = context
                self._maybe_warn()
            if event.kind == "tool_call" and isinstance(p.get("id"), str):
                self._open_calls.add(p["id"])
            elif event.kind == "tool_result":
                self._open_calls.discard(str(p.get("tool_use_id")))
                boundary = boundary or not self._open_calls
            elif event.kind == "turn":
                self._open_calls.clear()
                if self._stopped:  # the hook ended this turn for the handoff: it is not the step's end
                    return True
                # A turn that ends with nobody live ends the step: nothing left to hand over.
                boundary = boundary or live_workers
        return boundary and self._due(live_workers)

    def _due(self, live_workers: bool) -> bool:
        return self.context >= self.at and (not live_workers or self.context >= self.hard_at)

    def stop_hook(self, live_workers: Callable[[], bool], *, within: float = 2.0) -> HookMatcher:
        """A PostToolUse hook that ends the main thread's turn after the tool result that is a handoff boundary.

        The hook runs before the result streams to the Runtime, so it first waits (up to ``within`` seconds)
        until the call itself has been observed; a call it cannot place, a parallel call with others still
        open, a worker's call or a dispatch lets the turn go on (the step still stops at the result, one request
        later).
        """

        async def stop(data: Any, tool_use_id: str | None, context: Any) -> HookJSONOutput:
            call = tool_use_id or data.get("tool_use_id")
            if data.get("agent_id") or data.get("tool_name") in _DISPATCH_TOOLS or not isinstance(call, str):
                return {}
            with anyio.move_on_after(within):
                while call not in self._open_calls:  # noqa: ASYNC110 - the call is recorded by another task with no event to wait on
                    await anyio.sleep(0.01)
            if self._open_calls != {call} or not self._due(live_workers()):
                return {}
            self._stopped = True
            return {"continue_": False, "stopReason": "flower: context nearly full, handing off"}

        return HookMatcher(matcher=None, hooks=[stop])

    def _maybe_warn(self) -> None:
        if self._warned or self.context < self.warn_at:
            return
        self._warned = True
        left = max(0, self.at - self.context)
        self._emit(
            Event(
                "handoff",
                f"context {_k(self.context)}/{_k(self.window)} · about {_k(left)} to the handoff",
                payload={
                    "phase": "near",
                    "step": self.step,
                    "context": self.context,
                    "window": self.window,
                    "at": self.at,
                },
            )
        )

    # --- deciding ----------------------------------------------------------------------------------

    def after(self, *, due: bool, overflow: Sequence[str | None] = (), stopped: Sequence[str] = ()) -> Decision:
        """What follows a stream of the step that has ended.

        ``due``: it stopped at a handoff boundary (`observe` said so); ``overflow``: the errors of a stream that
        failed by itself (an interrupt is not a failure), which hands off when one says the context overflowed;
        ``stopped``: the workers still live, which a handoff ends. Deciding to write emits the "writing" event.
        """
        overflowed = is_overflow(*overflow)
        if not (due or overflowed):
            return Decision("go_on")
        if self.exhausted:
            return Decision("stop", reason=self.stop())
        if overflowed:
            return Decision("rebuild", overflow=tuple(overflow), stopped=tuple(stopped))
        self._emit(
            Event(
                "handoff",
                f"context {_k(self.context)}/{_k(self.window)}: writing a handoff",
                payload={
                    "phase": "writing",
                    "step": self.step,
                    "context": self.context,
                    "window": self.window,
                    "at": self.at,
                },
            )
        )
        return Decision("write", prompt=handoff_prompt(self.context, self.window, stopped), stopped=tuple(stopped))

    def too_big(self, sent_chars: int, budget: int, *, stopped: Sequence[str] = ()) -> Decision:
        """A resumed session whose history cannot fit its load budget even with every tool output and bulky
        input moved out: the request could not succeed, so the step hands off instead of sending it (the
        document built mechanically: the session cannot run a round to write it). `stop` after
        ``max_generations``."""
        if self.exhausted:
            return Decision("stop", reason=self.stop())
        reason = f"its history is {sent_chars:,} characters even trimmed, over the {budget:,} a resume may send"
        return Decision("rebuild", reason=reason, stopped=tuple(stopped))

    def before(self, context: int, *, stopped: Sequence[str] = ()) -> Decision:
        """A resumed session's last known context, before new words go in: `after`'s answer, due when it is
        already past the handoff point (its last turn ended its step, which never hands off)."""
        if context > self.context:
            self.context = context
        return self.after(due=self.context >= self.at, stopped=stopped)

    @property
    def exhausted(self) -> bool:
        return self.generations >= self.policy.max_generations

    def stop(self) -> str:
        """The one-line diagnostic when the step has handed off ``max_generations`` times and is due again."""
        n = self.generations
        message = (
            f"handed off {n} time{'s' if n != 1 else ''} in step {self.step!r} and the context is full again "
            f"({_k(self.context)} of a {_k(self.window)} window, handoff at {_k(self.at)}): the handoff point is "
            "probably below what this role needs to start; give a larger window (--window, FLOWER_WINDOW) or "
            "run with --no-handoff"
        )
        self._emit(
            Event(
                "handoff",
                message,
                payload={
                    "phase": "stopped",
                    "step": self.step,
                    "generations": n,
                    "context": self.context,
                    "window": self.window,
                    "at": self.at,
                },
            )
        )
        return message

    # --- the handoff -------------------------------------------------------------------------------

    def document(self, decision: Decision, written: QuietRound | None) -> tuple[Handoff, str]:
        """The handoff ``decision`` leads to: the one the old session ``written`` (the outcome of the round the
        decision asked for), or, when it could not write one, one built mechanically.

        Returns the document and, when it had to be built mechanically, why (else "").
        """
        if written is None and not decision.overflow and decision.reason:
            # Never sent (too big to fit its budget): no overflow happened, so nothing calibrates the window.
            return degraded(self.step, self.original_prompt, decision.reason), decision.reason
        if written is None:
            return self._overflowed(*decision.overflow), OVERFLOW_WHY
        if written.error is not None and is_overflow(written.error):
            return self._overflowed(written.error), OVERFLOW_WHY
        doc = Handoff.parse(written.text)
        why = ""
        if written.error is not None and not doc.complete:
            why = f"the writing round failed: {' '.join(written.error.split())[:160]}"
        elif not doc.complete:
            why = doc.incomplete_reason() or "it was empty"
        return (degraded(self.step, self.original_prompt, why), why) if why else (doc, "")

    def _overflowed(self, *errors: str | None) -> Handoff:
        """The context overflowed: remember the limit for later runs, and build the handoff mechanically.

        The API names its limit (``… > 200000 maximum``), but the harness passes on only "Prompt is too long";
        then the context last seen before the overflow is what is known not to fit, with the next request.
        """
        seen = overflow_limit(*errors) or self.context
        if seen:
            record_overflow(seen, model=self.model)
        return degraded(self.step, self.original_prompt, OVERFLOW_WHY)

    def take_over(self, doc: Handoff, old_session: str | None, *, why: str = "", stopped: Sequence[str] = ()) -> str:
        """Save ``doc``, retire ``old_session`` and start a new generation; returns the successor's prompt
        (which names the workers in ``stopped``: ended by the handoff before they finished)."""
        self.generations += 1
        if old_session and old_session not in self.retired:
            self.retired.append(old_session)
        path: Path | None
        try:
            path = save(self.save_dir, self.step, doc)
        except OSError:
            path = None  # the document still travels in the successor's prompt
        done = "handed off to a fresh session" + (f" (degraded: {why})" if why else "")
        if stopped:
            done += f"; stopped unfinished worker{'s' if len(stopped) != 1 else ''} " + ", ".join(
                repr(w) for w in stopped
            )
        self._emit(
            Event(
                "handoff",
                f"context full in step {self.step!r}: {done}",
                payload={
                    "phase": "done",
                    "step": self.step,
                    "context": self.context,
                    "window": self.window,
                    "at": self.at,
                    "degraded": doc.degraded,
                    "why": why,
                    "path": str(path) if path else "",
                    "retired": old_session,
                    "stopped_workers": list(stopped),
                    "generation": self.generations,
                    "sections": doc.summary(),
                },
            )
        )
        self.context, self._warned, self._open_calls, self._stopped = 0, False, set(), False
        return doc.successor_prompt(self.step, path=path, stopped=stopped)
