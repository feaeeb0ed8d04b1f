"""A usage limit met by a running step: seen in the stream, the harness stopped, the reset waited out by flower
itself (no model request meanwhile), then the same session launched again — or the step ended, recorded, when
the reset is further away than the person allows (``--limit-wait``, ``FLOWER_LIMIT_WAIT``).

Why flower waits and not the harness: Claude Code with ``CLAUDE_CODE_RETRY_WATCHDOG=1`` does wait for the reset,
but inside one process and without a limit on how long, without a line for the person, without the heartbeat or
the ``--json`` events, and a reset hours away would hold the process (and, in the fleet, a worker's slot) the
whole time. Its first retry notice (``api_retry``, ``retry_delay_ms`` ≈ the time left) is what tells flower the
reset; flower then closes that launch before its next request. A spend cap is not waited for: the step ends at
once with its own line.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio

from flower_resilience import UsageLimit, span_text, until_text, usage_limit

from .._shared.durations import seconds_in
from ._events import Event, EventSink

__all__ = [
    "DEFAULT_LIMIT_WAIT",
    "LIMITED",
    "LIMIT_WAIT_ENV",
    "SPEND_CAPPED",
    "LimitWait",
    "LimitWatch",
    "harness_retry_env",
    "held_prompt",
    "parse_wait",
]

LIMIT_WAIT_ENV = "FLOWER_LIMIT_WAIT"
DEFAULT_LIMIT_WAIT = 6 * 3600.0
LIMITED = "usage limit not waited out"  # how the error of a step ended by a limit not waited out starts
SPEND_CAPPED = "spend limit reached"  # how the error of a step ended by a spend cap starts
# The harness's retry settings flower starts it with, unless the person set them: the watchdog makes its first
# retry notice carry the reset; ten retries ride out ordinary bursts of 429/529 inside the harness.
HARNESS_RETRY_DEFAULTS = {"CLAUDE_CODE_RETRY_WATCHDOG": "1", "CLAUDE_CODE_MAX_RETRIES": "10"}
# After the reset: a little jitter, so the processes a limit stopped together do not all come back at once.
JITTER_S = (0.1, 0.6)
# How often the countdown is told while waiting (a `limit` event with phase "waiting"): the heartbeat's label.
COUNTDOWN_EVERY_S = 30.0
# The next launch starts this long before the reset, its prompt held until the reset (see `held_prompt`).
LEAD_S = 10.0

# A bare number is seconds; units spelled short or long.
_WAIT_UNITS = {
    **dict.fromkeys(("", "s", "sec", "secs", "second", "seconds"), "s"),
    **dict.fromkeys(("m", "min", "mins", "minute", "minutes"), "m"),
    **dict.fromkeys(("h", "hour", "hours"), "h"),
    **dict.fromkeys(("d", "day", "days"), "d"),
}


def parse_wait(text: str) -> float:
    """Seconds from ``90``, ``90s``, ``20m``, ``6h``, ``1d`` (``0``: do not wait); ValueError otherwise."""
    seconds = seconds_in(str(text), _WAIT_UNITS)
    if seconds is None:
        raise ValueError(f"{text!r} is not a duration; give e.g. 90s, 20m, 6h or 0 (do not wait)")
    return seconds


def harness_retry_env(spec_env: Mapping[str, str], environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The harness retry settings flower adds: each one the person (the environment or the role's env) left unset."""
    environ = os.environ if environ is None else environ
    return {k: v for k, v in HARNESS_RETRY_DEFAULTS.items() if k not in environ and k not in spec_env}


class LimitWatch:
    """What one step sees of usage limits in its stream: a warning said once, a refusal that ends the launch."""

    def __init__(self, emit: Callable[[str, UsageLimit, dict[str, Any]], None], said: set[str] | None = None) -> None:
        self._emit = emit
        self._said = set() if said is None else said  # the limits warned of (shared by a process's steps)

    def see(self, message: Any) -> UsageLimit | None:
        """The limit ``message`` reports that ends the launch now (a refusal with a reset, a spend cap), else None."""
        found = usage_limit(message)
        if found is None:
            return None
        if found.warning:
            if found.kind not in self._said:
                self._said.add(found.kind)
                self._emit("warning", found, {})
            return None
        return found if found.waitable or found.kind == "spend_cap" else None


@dataclass
class LimitWait:
    """The wait for one limit's reset, as a step does it (`wait`): True to launch the same session again.

    ``allowed``: the longest wait the person allows (seconds; 0 = never wait). ``stopped``: whether the step was
    stopped meanwhile. ``sleep``/``clock``: the waiting and the time (tests and the benchmark keep them real).
    """

    emit: EventSink
    step: str
    allowed: float
    stopped: Callable[[], bool]
    clock: Callable[[], float] = time.time
    sleep: Callable[[float], Any] = anyio.sleep
    jitter: Callable[[], float] = field(default=lambda: random.uniform(*JITTER_S))
    _told: float = 0.0  # when the countdown was last told

    def event(self, phase: str, limit: UsageLimit, text: str, **extra: Any) -> None:
        payload = {"step": self.step, "phase": phase, **limit.to_json(), **extra}
        self.emit(Event("limit", text, payload=payload))

    def ended(self, limit: UsageLimit) -> str:
        """The step's error for a limit not waited out (a spend cap, or a reset beyond ``allowed``)."""
        now = self.clock()
        if limit.kind == "spend_cap":
            line = f"{SPEND_CAPPED}: the organisation's spend cap refuses every request; nothing was retried"
            self.event("spend_cap", limit, line)
            return f"{line} (raise the cap, then continue)"
        line = f"{limit.describe(now)}; that is longer than the limit wait ({_allowed(self.allowed)})"
        self.event("ended", limit, line, limit_wait_s=self.allowed)
        return f"{LIMITED}: {line}"

    async def wait(self, limit: UsageLimit, session_id: str | None) -> float | None:
        """Wait until shortly before ``limit`` lifts (`LEAD_S`: the next harness starts meanwhile, its prompt held
        by `opens`); the moment the prompt may go (the reset plus jitter), or None: not waited (`ended` says why)
        or the step was stopped."""
        now = self.clock()
        if limit.kind == "spend_cap" or limit.resets_at is None or limit.seconds_left(now) > self.allowed:
            return None
        target = limit.resets_at + self.jitter()
        self.event(
            "reached",
            limit,
            f"{limit.describe(now)}; waiting, no requests until then",
            wait_s=round(target - now, 3),
            session_id=session_id,
        )
        self._told = now
        return target if await self._until(target - LEAD_S, limit, target) else None

    async def opens(self, limit: UsageLimit, target: float, session_id: str | None) -> bool:
        """Hold the next launch's prompt until ``target``; True once it passed (said), False if the step stopped."""
        if not await self._until(target, limit, target):
            return False
        said = f"{limit.name} lifted; resuming the same session" + (f" {session_id}" if session_id else "")
        late = round(self.clock() - (limit.resets_at or target), 3)
        self.event("resumed", limit, said, session_id=session_id, late_s=late)
        return True

    async def _until(self, moment: float, limit: UsageLimit, target: float) -> bool:
        """Sleep until ``moment``, the countdown told every `COUNTDOWN_EVERY_S`; False when the step was stopped."""
        while not self.stopped():
            now = self.clock()
            if now >= moment:
                return True
            if now - self._told >= COUNTDOWN_EVERY_S:
                self._told = now
                self.event(
                    "waiting", limit, f"{limit.name}: resuming at {until_text(target)}", wait_s=round(target - now, 3)
                )
            await self.sleep(min(moment - now, 0.5))
        return False


async def held_prompt(text: str, opens: Callable[[], Awaitable[bool]]) -> AsyncIterator[dict[str, Any]]:
    """``text`` as the SDK's streamed user message, sent once ``opens()`` says True (nothing when it says False).

    Why held and not sent later: the harness takes seconds to start (up to 7 s measured on a loaded 2-core
    machine), so the launch after a limit starts before the reset and its request leaves right after it.
    """
    if await opens():
        yield {
            "type": "user",
            "session_id": "",
            "message": {"role": "user", "content": text},
            "parent_tool_use_id": None,
        }


def _allowed(seconds: float) -> str:
    return "0: never wait" if seconds <= 0 else f"{span_text(seconds)}, --limit-wait / {LIMIT_WAIT_ENV}"
