"""Questions in a fleet run: the human channel of a go phase, which PAUSES the phase when its own agent (the
clarifier, the goal-setter, the coordinator) asks the person, instead of waiting inside the activity.

A person may take hours to answer. Waiting in the activity would hold a worker slot all that time, so the
question ends the activity: the channel remembers it and halts the phase (`FleetRunner.halt`: the asking agent's
Claude Code is interrupted, so it sends the model nothing more, and the phase stops); the activity returns it; the
Temporal workflow records it (`flower fleet status` shows it) and waits for the ``answer`` signal holding no
slot; then a new activity continues the same session with the answer (or, when nobody answered within the
question timeout, with go's "nobody answered, make your own call" text).

What cannot pause falls through at once with go's "nobody answered" semantics: a question from a side session
(a round's judge) or from a gate (the judge's "unreachable" question), whose launch is not the phase's own.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import anyio

from flower_cli import HumanChannel

from ._runner import ANSWER_NOTE

__all__ = ["PausingChannel", "answer_note"]


class PausingChannel(HumanChannel):
    """A `HumanChannel` whose phase's own agent's question pauses the phase (see the module).

    ``pause`` halts the phase (set by the activity before it runs it); ``own`` says whether the launch in
    flight is the phase's own (its label's base is the phase). After the pause, ``paused`` holds the question
    and its options.
    """

    def __init__(self, *, own: Callable[[], bool], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.own = own
        self.pause: Callable[[], Awaitable[None]] | None = None
        self.paused: tuple[str, list[str]] | None = None

    @property
    def used(self) -> int:
        """The questions this channel counted against the quota (asked, answered or not)."""
        return sum(1 for a in self.asks if a.state not in ("invalid", "over_budget")) + (1 if self.paused else 0)

    async def ask(self, question: str, options: Sequence[str] | None = None) -> str:
        text = (question or "").strip()
        choices = [o.strip() for o in options or () if isinstance(o, str) and o.strip()]
        nobody_asked = self.timeout_s is not None and self.timeout_s <= 0
        if not text or self.remaining == 0 or nobody_asked or self.pause is None or not self.own():
            if text and not nobody_asked and self.remaining != 0:
                # Not the phase's own agent (a judge, a gate): it cannot pause, and must not hold the slot.
                saved, self.timeout_s = self.timeout_s, 0.0
                try:
                    return await super().ask(question, options)
                finally:
                    self.timeout_s = saved
            return await super().ask(question, options)
        self.paused = (text, choices)
        await self.pause()
        # The halt interrupted the harness, whose turn ended without this call's answer; what is left of the
        # call is cancelled when the SDK closes its in-process tools.
        await anyio.sleep_forever()
        raise AssertionError("unreachable: the call was cancelled")  # pragma: no cover - sleep_forever never returns


def answer_note(question: str, answer: str, *, timed_out: bool, channel: HumanChannel) -> str:
    """What the continued session is told (``{where}`` is filled by the runner: where the workspace came from):
    the question and the answer, or go's text for a question nobody answered in time or the person skipped."""
    if timed_out:
        reply = channel.timeout_text
    elif answer.strip():
        reply = f"The person answered:\n{answer.strip()}"
    else:
        reply = channel.declined_text
    return ANSWER_NOTE.replace("{question}", question).replace("{reply}", reply)
