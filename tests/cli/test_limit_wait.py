"""The step's side of a usage limit (runtime/_limit_wait.py), without the model: the duration the person allows,
the harness settings flower adds, the warning said once, and the wait itself on a fast clock."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest

from flower_cli.runtime import AgentSpec, Event, build_options, parse_wait
from flower_cli.runtime._limit_wait import (
    LEAD_S,
    LIMITED,
    SPEND_CAPPED,
    LimitWait,
    LimitWatch,
    harness_retry_env,
    held_prompt,
)
from flower_resilience import UsageLimit


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("0", 0), ("90", 90), ("90s", 90), ("20m", 1200), ("6h", 21600), ("1d", 86400), ("1.5 h", 5400)],
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_wait(text) == seconds


@pytest.mark.parametrize("text", ["", "soon", "-1m", "6 hours later", "1w"])
def test_a_bad_duration_says_what_to_give(text: str) -> None:
    with pytest.raises(ValueError, match="give e.g. 90s, 20m, 6h or 0"):
        parse_wait(text)


def test_the_harness_gets_the_watchdog_and_ten_retries_unless_the_person_set_them() -> None:
    assert harness_retry_env({}, {}) == {"CLAUDE_CODE_RETRY_WATCHDOG": "1", "CLAUDE_CODE_MAX_RETRIES": "10"}
    assert harness_retry_env({}, {"CLAUDE_CODE_MAX_RETRIES": "0"}) == {"CLAUDE_CODE_RETRY_WATCHDOG": "1"}
    assert harness_retry_env({"CLAUDE_CODE_RETRY_WATCHDOG": "0"}, {"CLAUDE_CODE_MAX_RETRIES": "3"}) == {}


def test_a_warning_is_said_once_and_ends_nothing() -> None:
    said: list[tuple[str, UsageLimit]] = []
    watch = LimitWatch(lambda phase, limit, extra: said.append((phase, limit)))
    warning = {"rate_limit_info": {"status": "allowed_warning", "rateLimitType": "five_hour", "utilization": 0.85}}
    assert watch.see(warning) is None and watch.see(warning) is None
    assert [phase for phase, _ in said] == ["warning"]
    refused = {"subtype": "api_retry", "error_status": 429, "retry_delay_ms": 30_000}
    limit = watch.see(refused)
    assert limit is not None and limit.waitable


class FakeClock:
    """Time that moves only when the wait sleeps: the wait's arithmetic, tested without waiting."""

    def __init__(self, now: float) -> None:
        self.now = now
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds
        await anyio.lowlevel.checkpoint()


def waiter(events: list[Event], clock: FakeClock, allowed: float, stopped: Any = lambda: False) -> LimitWait:
    return LimitWait(events.append, "work", allowed, stopped, clock=clock, sleep=clock.sleep, jitter=lambda: 0.3)


def test_a_reset_within_the_allowed_wait_is_waited_out_with_a_countdown_and_the_prompt_held_until_it() -> None:
    clock, events = FakeClock(1000.0), []
    limit = UsageLimit("five_hour", 1000.0 + 95)
    wait = waiter(events, clock, allowed=3600)
    target = anyio.run(wait.wait, limit, "sid")
    assert target == pytest.approx(1095.3)  # the reset plus the jitter
    assert clock.now == pytest.approx(1095.3 - LEAD_S)  # the next harness starts before it, its prompt held

    async def held() -> list[dict[str, Any]]:
        return [m async for m in held_prompt("go on", partial(wait.opens, limit, target, "sid"))]

    [message] = anyio.run(held)
    assert clock.now == pytest.approx(1095.3) and message["message"] == {"role": "user", "content": "go on"}
    phases = [e.payload["phase"] for e in events]
    assert phases[0] == "reached" and phases[-1] == "resumed" and phases.count("waiting") == 3
    assert events[0].payload["resets_at"] == 1095.0 and "waiting, no requests until then" in events[0].text
    assert events[-1].payload["late_s"] == pytest.approx(0.3) and "resuming the same session sid" in events[-1].text


def test_a_reset_beyond_the_allowed_wait_and_a_spend_cap_end_the_step() -> None:
    clock, events = FakeClock(1000.0), []
    far = UsageLimit("usage", 1000.0 + 6 * 3600)
    wait = waiter(events, clock, allowed=60)
    assert anyio.run(wait.wait, far, "sid") is None and clock.slept == []
    error = wait.ended(far)
    assert error.startswith(LIMITED) and "(in 6 h)" in error and "limit wait (1 min" in error
    never = waiter(events, clock, allowed=0)
    assert anyio.run(never.wait, UsageLimit("usage", 1001.0), None) is None
    capped = wait.ended(UsageLimit("spend_cap"))
    assert capped.startswith(SPEND_CAPPED) and "nothing was retried" in capped


def test_a_step_stopped_while_waiting_does_not_resume_and_sends_no_prompt() -> None:
    clock, events = FakeClock(1000.0), []
    stop_after = iter([False, False, True, True, True])
    wait = waiter(events, clock, allowed=3600, stopped=lambda: next(stop_after))
    assert anyio.run(wait.wait, UsageLimit("usage", 1100.0), None) is None
    assert [e.payload["phase"] for e in events] == ["reached"]
    stopped = waiter(events, clock, allowed=3600, stopped=lambda: True)

    async def held() -> list[dict[str, Any]]:
        return [
            m async for m in held_prompt("go on", partial(stopped.opens, UsageLimit("usage", 1100.0), 1100.3, None))
        ]

    assert anyio.run(held) == []


def test_build_options_writes_the_retry_settings_the_person_left_unset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CLAUDE_CODE_RETRY_WATCHDOG", raising=False)
    monkeypatch.setenv("CLAUDE_CODE_MAX_RETRIES", "0")
    options = build_options(AgentSpec("r", "x"), cwd=tmp_path)
    assert options.env["CLAUDE_CODE_RETRY_WATCHDOG"] == "1" and "CLAUDE_CODE_MAX_RETRIES" not in options.env
    mine = build_options(AgentSpec("r", "x", env={"CLAUDE_CODE_RETRY_WATCHDOG": "0"}), cwd=tmp_path)
    assert mine.env["CLAUDE_CODE_RETRY_WATCHDOG"] == "0"


def test_the_view_says_a_limit_once_counts_it_down_in_the_heartbeat_and_hides_the_harness_retry() -> None:
    import io
    import time

    from flower_cli.view import Renderer

    log = io.StringIO()
    view = Renderer(log, color=False)
    view._heartbeat.tick = 3600.0  # the test reads the heartbeat itself, with its own clock
    resets_at = time.time() + 600
    retry = {"subtype": "api_retry", "attempt": 1, "max_retries": 10, "error_status": 429, "retry_delay_ms": 600_000}
    view(Event("system", "api_retry", payload=retry))
    assert "Claude Code retries it" not in log.getvalue(), "a limit's retry notice is flower's to wait out"
    limit = {"phase": "reached", "name": "usage limit", "resets_at": resets_at}
    view(
        Event(
            "limit",
            "usage limit reached; it resets at 10:00 (in 10 min); waiting, no requests until then",
            payload=limit,
        )
    )
    view(Event("limit", "usage limit: resuming at 10:00", payload={**limit, "phase": "waiting"}))
    assert log.getvalue().count("usage limit reached") == 1
    assert "waiting out the usage limit · resets" in (view.heartbeat(time.monotonic() + 5) or "")
    view(Event("limit", "usage limit lifted; resuming the same session s1", payload={**limit, "phase": "resumed"}))
    assert "resuming the same session s1" in log.getvalue()
    assert view.heartbeat(time.monotonic() + 5) is None
