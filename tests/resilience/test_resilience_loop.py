"""The retry loop, branch by branch, against a scripted stand-in for ``claude_agent_sdk.query``.

The real binary runs in tests/e2e/test_resilience_e2e.py; here the harness's message sequences (taken from
that binary's behaviour) are replayed so every branch runs in milliseconds under a virtual clock.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    CLIConnectionError,
    CLIJSONDecodeError,
    InMemorySessionStore,
    RateLimitEvent,
    RateLimitInfo,
    ResultError,
    ResultMessage,
    TextBlock,
    project_key_for_directory,
)
from resilience._fakes import (
    FakeQuery,
    FakeTime,
    closed_port,
    crash,
    init,
    listening,
    notice,
    outage,
    result,
    result_error,
    said,
    tool,
)

from flower_resilience import RESUME_PROMPT, ResilienceError, ResilienceEvent, is_synthetic, resilient_query

S1 = "11111111-1111-4111-8111-111111111111"
S2 = "22222222-2222-4222-8222-222222222222"
OLD = "00000000-0000-4000-8000-000000000000"


@pytest.fixture
def online() -> Any:
    with listening() as target:
        yield target


async def drain(stream: Any) -> list[Any]:
    return [m async for m in stream]


def kinds(events: list[ResilienceEvent]) -> list[str]:
    return [e.kind for e in events]


async def test_an_outage_resumes_the_same_session_with_the_resume_prompt(online: tuple[str, int]) -> None:
    fake = FakeQuery(
        [[init(S1), tool("echo one", S1), *outage(S1)], [init(S1), said("All done.", S1), result(S1, text="All done.")]]
    )
    clock, events = FakeTime(), []
    options = ClaudeAgentOptions(cwd="/tmp")
    stream = resilient_query(
        prompt="do the four steps",
        options=options,
        policy=clock.policy(),
        on_event=events.append,
        query_fn=fake,
        probe_target=online,
    )
    messages = await drain(stream)

    assert [type(m).__name__ for m in messages] == [
        "SystemMessage",
        "AssistantMessage",
        "SystemMessage",
        "AssistantMessage",
        "ResultMessage",
    ]
    assert not any(isinstance(m, AssistantMessage) and is_synthetic(m) for m in messages)
    results = [m for m in messages if isinstance(m, ResultMessage)]
    assert len(results) == 1 and results[0].is_error is False and results[0].result == "All done."

    first, second = fake.calls
    assert first.options is options and first.prompt == "do the four steps"
    assert second.prompt == RESUME_PROMPT
    assert second.options.resume == S1 and second.options.fork_session is False and second.options is not options
    assert options.resume is None, "the caller's options must not change"
    assert first.closed and second.closed

    record = stream.record
    assert record.ok and record.finished and record.resumed and record.error is None
    assert record.session_ids == [S1] and record.session_id == S1
    failed, resumed = record.attempts
    assert failed.error is not None and "ECONNRESET" in failed.error and failed.kind == "transient"
    assert failed.api_errors and failed.api_errors[0].startswith("API Error: Connection dropped")
    assert not failed.resumed and resumed.resumed and resumed.error is None and resumed.kind is None
    assert failed.backoff_s == 4.0 and failed.wait_s == 4.0 and failed.offline_s == 0.0
    assert clock.sleeps == [4.0]
    assert kinds(events) == ["attempt_failed", "backoff", "resumed"]
    assert events[0].attempt == 1 and events[0].error_kind == "transient" and events[2].attempt == 2
    assert events[2].session_id == S1 and "resuming session" in events[2].message


async def test_an_error_result_without_an_exception_is_a_failure_too(online: tuple[str, int]) -> None:
    text = "API Error: 529 Overloaded. This is a server-side issue, usually temporary — try again in a moment."
    fake = FakeQuery(
        [[init(S1), notice(text, S1), result(S1, ok=False, status=529, text=text)], [init(S1), result(S1)]]
    )
    stream = resilient_query(prompt="p", policy=FakeTime().policy(), query_fn=fake, probe_target=online)
    messages = await drain(stream)
    assert [m.is_error for m in messages if isinstance(m, ResultMessage)] == [False]
    assert stream.record.attempts[0].status == 529 and stream.record.attempts[0].kind == "transient"
    assert fake.calls[1].options.resume == S1


async def test_process_and_connection_errors_are_retried_and_never_reach_the_caller(online: tuple[str, int]) -> None:
    fake = FakeQuery(
        [
            [init(S1), tool("ls", S1), crash("Command failed with exit code 143", 143)],
            [CLIConnectionError("ProcessTransport is not ready for writing")],
            [init(S1), result(S1)],
        ]
    )
    stream = resilient_query(prompt="p", policy=FakeTime().policy(), query_fn=fake, probe_target=online)
    messages = await drain(stream)  # no exception escapes
    assert isinstance(messages[-1], ResultMessage)
    errors = [a.error or "" for a in stream.record.attempts]
    assert errors[0].startswith("ProcessError:") and errors[1].startswith("CLIConnectionError:") and errors[2] == ""
    assert [c.options.resume for c in fake.calls] == [None, S1, S1]
    assert stream.record.ok


async def test_without_a_session_id_it_restarts_with_the_original_prompt(online: tuple[str, int]) -> None:
    fake = FakeQuery([[crash()], [init(S1), result(S1)]])
    events: list[ResilienceEvent] = []
    options = ClaudeAgentOptions(model="claude-x")
    stream = resilient_query(
        prompt="original",
        options=options,
        policy=FakeTime().policy(),
        on_event=events.append,
        query_fn=fake,
        probe_target=online,
    )
    await drain(stream)
    assert fake.calls[1].prompt == "original" and fake.calls[1].options is options
    assert kinds(events) == ["attempt_failed", "backoff", "restarted"]
    assert not stream.record.resumed and stream.record.ok


async def test_a_fatal_error_stops_at_once_and_ends_with_the_error_result(online: tuple[str, int]) -> None:
    res = result(S1, ok=False, status=401, text="Invalid API key · Fix external API key", cost=0.0)
    fake = FakeQuery([[init(S1), notice(res.result or "", S1, "authentication_failed"), res, result_error(res)]])
    clock, events = FakeTime(), []
    stream = resilient_query(
        prompt="p", policy=clock.policy(), on_event=events.append, query_fn=fake, probe_target=online
    )
    messages = await drain(stream)

    assert len(fake.calls) == 1 and clock.sleeps == []
    assert isinstance(messages[-1], ResultMessage) and messages[-1].is_error
    assert not any(isinstance(m, AssistantMessage) for m in messages)
    record = stream.record
    assert record.finished and not record.ok and record.kind == "fatal"
    assert record.error == "Invalid API key · Fix external API key"
    assert record.attempts[0].status == 401
    assert kinds(events) == ["attempt_failed", "gave_up"]
    with pytest.raises(ResilienceError, match="Invalid API key") as raised:
        record.raise_for_error()
    assert raised.value.record is record and raised.value.kind == "fatal"


async def test_raise_on_failure_raises_after_the_final_result(online: tuple[str, int]) -> None:
    res = result(S1, ok=False, status=401, text="Invalid API key")
    fake = FakeQuery([[init(S1), res, result_error(res)]])
    seen: list[Any] = []
    with pytest.raises(ResilienceError):
        async for message in resilient_query(
            prompt="p", policy=FakeTime().policy(), query_fn=fake, probe_target=online, raise_on_failure=True
        ):
            seen.append(message)
    assert isinstance(seen[-1], ResultMessage) and seen[-1].is_error


async def test_max_attempts_counts_the_first_and_every_error_is_kept(online: tuple[str, int]) -> None:
    fake = FakeQuery([[init(S1), *outage(S1)] for _ in range(3)])
    clock, events = FakeTime(), []
    stream = resilient_query(
        prompt="p", policy=clock.policy(max_attempts=3), on_event=events.append, query_fn=fake, probe_target=online
    )
    messages = await drain(stream)
    assert len(fake.calls) == 3 and clock.sleeps == [4.0, 8.0]
    assert [m.is_error for m in messages if isinstance(m, ResultMessage)] == [True]  # only the final result
    assert len(stream.record.errors) == 3 and stream.record.kind == "transient"
    assert kinds(events)[-1] == "gave_up" and "max_attempts (3)" in events[-1].message
    assert [a.wait_s for a in stream.record.attempts] == [4.0, 8.0, 0.0]


async def test_disabled_policy_makes_one_attempt(online: tuple[str, int]) -> None:
    fake = FakeQuery([[init(S1), *outage(S1)]])
    stream = resilient_query(prompt="p", policy=False, query_fn=fake, probe_target=online)
    messages = await drain(stream)
    assert len(fake.calls) == 1 and stream.record.kind == "transient" and not stream.record.ok
    assert not any(isinstance(m, AssistantMessage) for m in messages), "synthetic notices stay out even then"


async def test_unknown_errors_follow_retry_unknown(online: tuple[str, int]) -> None:
    fake = FakeQuery([[init(S1), crash("something odd")]])
    stream = resilient_query(
        prompt="p", policy=FakeTime().policy(retry_unknown=False), query_fn=fake, probe_target=online
    )
    await drain(stream)
    assert len(fake.calls) == 1 and stream.record.kind == "unknown"


async def test_server_hints_replace_the_backoff_capped_at_max_delay(online: tuple[str, int]) -> None:
    soon = RateLimitEvent(RateLimitInfo(status="rejected", resets_at=int(time.time()) + 30), uuid="u", session_id=S1)
    later = RateLimitEvent(
        RateLimitInfo(status="rejected", resets_at=int(time.time()) + 5 * 3600), uuid="u", session_id=S1
    )
    text = "API Error: Request rejected (429) · Rate limited. Retry after 7 seconds."
    fake = FakeQuery(
        [
            [init(S1), soon, *outage(S1)],
            [init(S1), later, *outage(S1)],
            [init(S1), notice(text, S1, "rate_limit"), result(S1, ok=False, status=429, text=text)],
            [init(S1), result(S1)],
        ]
    )
    clock = FakeTime()
    stream = resilient_query(prompt="p", policy=clock.policy(), query_fn=fake, probe_target=online)
    messages = await drain(stream)
    assert 25 <= clock.sleeps[0] <= 31 and clock.sleeps[1] == 120.0 and clock.sleeps[2] == 7.0
    assert sum(isinstance(m, RateLimitEvent) for m in messages) == 2, "rate-limit events are the caller's too"


async def test_while_offline_it_waits_probing_then_resumes_as_soon_as_the_probe_finds_it_back() -> None:
    host, port = closed_port()
    opened: list[socket.socket] = []
    clock, events = FakeTime(), []
    clock.on_sleep = [None, lambda: opened.append(socket.create_server((host, port)))]  # back after two probes' sleeps
    fake = FakeQuery([[init(S1), *outage(S1)], [init(S1), result(S1)]])
    try:
        stream = resilient_query(
            prompt="p", policy=clock.policy(), on_event=events.append, query_fn=fake, probe_target=(host, port)
        )
        await drain(stream)
    finally:
        for s in opened:
            s.close()
    # No backoff once the probe has seen the endpoint return: the outage was the failure, and it is over.
    assert kinds(events) == ["attempt_failed", "offline", "online", "resumed"]
    assert events[1].message == f"{host}:{port} unreachable, waiting up to 60 min"
    assert events[2].message == f"{host}:{port} reachable again, continuing"
    failed = stream.record.attempts[0]
    assert failed.offline_s == 1.125 and failed.backoff_s == 0.0 and failed.wait_s == 1.125 and failed.probes == 3
    assert clock.sleeps == [0.5, 0.625], "probes 0.5 s, then 0.625 s apart; nothing after the endpoint is back"
    assert fake.calls[1].options.resume == S1 and stream.record.ok


def _back_after(clock: FakeTime, sleeps: int) -> tuple[tuple[str, int], list[socket.socket]]:
    """A closed port that starts listening after the clock's ``sleeps``-th sleep."""
    host, port = closed_port()
    opened: list[socket.socket] = []
    clock.on_sleep = [None] * (sleeps - 1) + [lambda: opened.append(socket.create_server((host, port)))]
    return (host, port), opened


@pytest.mark.parametrize(
    ("status", "text", "code"),
    [
        (
            529,
            "API Error: 529 Overloaded. This is a server-side issue, usually temporary — try again in a moment.",
            "server_error",
        ),
        (429, "API Error: Request rejected (429) · Too many requests.", "rate_limit"),
    ],
)
async def test_a_rate_limit_or_an_overload_keeps_its_backoff_even_across_an_outage(
    status: int, text: str, code: str
) -> None:
    clock, events = FakeTime(), []
    target, opened = _back_after(clock, 2)
    fake = FakeQuery(
        [[init(S1), notice(text, S1, code), result(S1, ok=False, status=status, text=text)], [init(S1), result(S1)]]
    )
    try:
        stream = resilient_query(
            prompt="p", policy=clock.policy(), on_event=events.append, query_fn=fake, probe_target=target
        )
        await drain(stream)
    finally:
        for s in opened:
            s.close()
    # The server asked us to slow down; an outage in between does not lift that. The time offline counts.
    assert clock.sleeps == [0.5, 0.625, 2.875]
    assert kinds(events) == ["attempt_failed", "offline", "online", "backoff", "resumed"]
    failed = stream.record.attempts[0]
    assert failed.offline_s == 1.125 and failed.backoff_s == 2.875 and failed.wait_s == 4.0


async def test_a_server_hint_is_still_honoured_after_an_outage() -> None:
    clock = FakeTime()
    target, opened = _back_after(clock, 1)
    hinted = "API Error: 503 Service Unavailable. Retry after 20 seconds."
    fake = FakeQuery(
        [[init(S1), notice(hinted, S1), result(S1, ok=False, status=503, text=hinted)], [init(S1), result(S1)]]
    )
    try:
        stream = resilient_query(prompt="p", policy=clock.policy(), query_fn=fake, probe_target=target)
        await drain(stream)
    finally:
        for s in opened:
            s.close()
    assert clock.sleeps == [0.5, 19.5]
    assert stream.record.ok


async def test_a_401_never_probes_or_waits_even_with_the_network_down() -> None:
    res = result(S1, ok=False, status=401, text="Invalid API key · Fix external API key", cost=0.0)
    fake = FakeQuery([[init(S1), notice(res.result or "", S1, "authentication_failed"), res, result_error(res)]])
    clock, events = FakeTime(), []
    stream = resilient_query(
        prompt="p", policy=clock.policy(), on_event=events.append, query_fn=fake, probe_target=closed_port()
    )
    await drain(stream)
    assert kinds(events) == ["attempt_failed", "gave_up"] and clock.sleeps == []
    assert stream.record.attempts[0].probes == 0 and stream.record.kind == "fatal"


async def test_a_network_that_never_comes_back_ends_with_a_clear_error() -> None:
    target = closed_port()
    clock, events = FakeTime(), []
    fake = FakeQuery([[init(S1), *outage(S1)]])
    stream = resilient_query(
        prompt="p",
        policy=clock.policy(probe_interval=0.25, max_offline_wait=1.0),
        on_event=events.append,
        query_fn=fake,
        probe_target=target,
    )
    messages = await drain(stream)
    record = stream.record
    assert record.error is not None
    assert record.error.startswith(
        f"network not back within 1 s ({target[0]}:{target[1]} unreachable); last error: API Error"
    )
    assert record.attempts[-1].error == record.error and record.kind == "transient"
    assert kinds(events) == ["attempt_failed", "offline", "gave_up"]
    assert isinstance(messages[-1], ResultMessage) and messages[-1].is_error
    assert len(fake.calls) == 1


async def test_closing_early_ends_the_stream_and_records_a_closed_attempt(online: tuple[str, int]) -> None:
    fake = FakeQuery([[init(S1), tool("ls", S1), said("more", S1), result(S1)]])
    stream = resilient_query(prompt="p", policy=FakeTime().policy(), query_fn=fake, probe_target=online)
    async for message in stream:
        if isinstance(message, AssistantMessage):
            break
    await stream.aclose()
    await stream.aclose()  # idempotent
    assert fake.calls[0].closed and not fake.calls[0].finished
    record = stream.record
    assert record.closed and not record.ok and not record.finished and record.error is None
    assert len(record.attempts) == 1 and record.attempts[0].closed and record.attempts[0].error is None
    assert record.session_id == S1, "the caller can resume what it interrupted"
    with pytest.raises(ResilienceError, match="closed before the run finished"):
        record.raise_for_error()


async def test_breaking_at_the_result_is_a_finished_run(online: tuple[str, int]) -> None:
    fake = FakeQuery([[init(S1), result(S1, cost=0.3, turns=2)]])
    async with resilient_query(prompt="p", policy=FakeTime().policy(), query_fn=fake, probe_target=online) as stream:
        async for message in stream:
            if isinstance(message, ResultMessage):
                break
    assert stream.record.ok and not stream.record.closed
    assert stream.record.cost_usd == 0.3 and stream.record.num_turns == 2


async def test_closing_before_iterating_is_harmless() -> None:
    fake = FakeQuery([[init(S1), result(S1)]])
    stream = resilient_query(prompt="p", query_fn=fake)
    await stream.aclose()
    assert fake.calls == [] and stream.record.attempts == []


async def test_on_event_may_be_async_and_a_raising_one_does_not_end_the_run(online: tuple[str, int]) -> None:
    heard: list[str] = []

    async def async_handler(event: ResilienceEvent) -> None:
        heard.append(event.kind)

    def broken_handler(event: ResilienceEvent) -> None:
        raise RuntimeError("renderer bug")

    for handler in (async_handler, broken_handler):
        fake = FakeQuery([[init(S1), *outage(S1)], [init(S1), result(S1)]])
        stream = resilient_query(
            prompt="p", policy=FakeTime().policy(), on_event=handler, query_fn=fake, probe_target=online
        )
        await drain(stream)
        assert stream.record.ok
    assert heard == ["attempt_failed", "backoff", "resumed"]


async def test_resume_options_are_a_copy_that_continues_exactly_the_failed_session(online: tuple[str, int]) -> None:
    options = ClaudeAgentOptions(
        resume=OLD, fork_session=True, resume_session_at="entry-uuid", continue_conversation=False
    )
    fake = FakeQuery([[init(S2), *outage(S2)], [init(S2), result(S2)]])
    stream = resilient_query(
        prompt="p", options=options, policy=FakeTime().policy(), query_fn=fake, probe_target=online
    )
    await drain(stream)
    retry = fake.calls[1].options
    assert (
        retry.resume == S2
        and retry.fork_session is False
        and retry.resume_session_at is None
        and retry.session_id is None
    )
    assert (options.resume, options.fork_session, options.resume_session_at) == (OLD, True, "entry-uuid")


async def test_a_resume_that_finds_no_session_starts_over(online: tuple[str, int]) -> None:
    missing = ResultError(
        f"Claude Code returned an error result: No conversation found with session ID: {S1}",
        data={"is_error": True, "result": f"No conversation found with session ID: {S1}"},
        exit_code=1,
    )
    fake = FakeQuery([[init(S1), *outage(S1)], [missing], [init(S2), result(S2)]])
    events: list[ResilienceEvent] = []
    stream = resilient_query(
        prompt="original", policy=FakeTime().policy(), on_event=events.append, query_fn=fake, probe_target=online
    )
    await drain(stream)
    assert [c.prompt for c in fake.calls] == ["original", RESUME_PROMPT, "original"]
    assert fake.calls[2].options.resume is None
    assert kinds(events) == ["attempt_failed", "backoff", "resumed", "attempt_failed", "backoff", "restarted"]
    assert stream.record.ok and stream.record.session_ids == [S1, S2]


async def test_a_callers_resume_of_a_missing_session_is_fatal(online: tuple[str, int]) -> None:
    missing = ResultError(
        "Claude Code returned an error result: No conversation found with session ID: x",
        data={"is_error": True, "result": "No conversation found with session ID: x"},
        exit_code=1,
    )
    fake = FakeQuery([[missing]])
    stream = resilient_query(
        prompt="p",
        options=ClaudeAgentOptions(resume=OLD),
        policy=FakeTime().policy(),
        query_fn=fake,
        probe_target=online,
    )
    await drain(stream)
    assert len(fake.calls) == 1 and stream.record.kind == "fatal"


async def test_a_streamed_prompt_is_resumed_but_never_replayed(online: tuple[str, int]) -> None:
    async def prompts() -> AsyncIterator[dict[str, Any]]:
        yield {"type": "user", "message": {"role": "user", "content": "hi"}}

    fake = FakeQuery([[crash()]])
    events: list[ResilienceEvent] = []
    stream = resilient_query(
        prompt=prompts(), policy=FakeTime().policy(), on_event=events.append, query_fn=fake, probe_target=online
    )
    await drain(stream)
    assert len(fake.calls) == 1 and not stream.record.ok
    assert kinds(events) == ["attempt_failed", "gave_up"] and "cannot be replayed" in events[-1].message

    fake = FakeQuery([[init(S1), crash()], [init(S1), result(S1)]])
    stream = resilient_query(prompt=prompts(), policy=FakeTime().policy(), query_fn=fake, probe_target=online)
    await drain(stream)
    assert fake.calls[1].prompt == RESUME_PROMPT and stream.record.ok


async def test_a_line_over_the_sdks_buffer_is_not_retried(online: tuple[str, int]) -> None:
    """The SDK refused one line of the harness's output as too large (a fork of a big session): every retry of the
    same launch would read the same line and fail the same way, after paid requests — one attempt, fatal."""
    too_big = CLIJSONDecodeError(
        "JSON message exceeded maximum buffer size of 1048576 bytes", ValueError("Buffer size 4194304 exceeds limit")
    )
    fake = FakeQuery([[init(S1), too_big], [init(S1), result(S1)]])
    events: list[ResilienceEvent] = []
    stream = resilient_query(
        prompt="fork it", policy=FakeTime().policy(), on_event=events.append, query_fn=fake, probe_target=online
    )
    await drain(stream)
    assert len(fake.calls) == 1 and not stream.record.ok
    assert [a.kind for a in stream.record.attempts] == ["fatal"]
    assert "maximum buffer size" in (stream.record.error or "")


async def test_harness_made_messages_without_an_error_stay_out_but_do_not_fail_the_run(online: tuple[str, int]) -> None:
    filler = AssistantMessage(content=[TextBlock("No response requested.")], model="<synthetic>", session_id=S1)
    flagged = AssistantMessage(
        content=[TextBlock("partial"), *tool("ls", S1).content], model="claude-x", error="unknown", session_id=S1
    )
    fake = FakeQuery([[init(S1), filler, flagged, result(S1)]])
    stream = resilient_query(prompt="p", policy=FakeTime().policy(), query_fn=fake, probe_target=online)
    messages = await drain(stream)
    assert filler not in messages and flagged in messages, "real content is kept even when it carries an error code"
    assert stream.record.ok


# --- cost accounting --------------------------------------------------------------------------------------


async def test_cost_when_the_harness_reports_session_totals_after_a_resume(online: tuple[str, int]) -> None:
    # What Claude Code 2.1.332 does: the resumed run's total_cost_usd and model_usage include the first run.
    fake = FakeQuery(
        [
            [init(S1), *outage(S1, cost=0.021804, turns=3, run_tokens=5281, total_tokens=5281)],
            [init(S1), result(S1, cost=0.044772, turns=2, run_tokens=5642, total_tokens=10923)],
        ]
    )
    stream = resilient_query(prompt="p", policy=FakeTime().policy(), query_fn=fake, probe_target=online)
    await drain(stream)
    first, second = stream.record.attempts
    assert first.cost_usd == pytest.approx(0.021804) and second.cost_usd == pytest.approx(0.022968)
    assert second.reported_cost_usd == pytest.approx(0.044772)
    assert stream.record.cost_usd == pytest.approx(0.044772) and stream.record.num_turns == 5


async def test_cost_when_the_harness_reports_per_run_figures(online: tuple[str, int]) -> None:
    # A harness that did not restore the counters: the same totals must come out.
    fake = FakeQuery(
        [
            [init(S1), *outage(S1, cost=0.021804, turns=3, run_tokens=5281, total_tokens=5281)],
            [init(S1), result(S1, cost=0.022968, turns=2, run_tokens=5642, total_tokens=5642)],
        ]
    )
    stream = resilient_query(prompt="p", policy=FakeTime().policy(), query_fn=fake, probe_target=online)
    await drain(stream)
    assert [a.cost_usd for a in stream.record.attempts] == pytest.approx([0.021804, 0.022968])
    assert stream.record.cost_usd == pytest.approx(0.044772)


async def test_cost_of_a_restart_adds_up(online: tuple[str, int]) -> None:
    fake = FakeQuery([[init(S1), *outage(S1, cost=0.5)], [missing_session()], [init(S2), result(S2, cost=0.25)]])
    stream = resilient_query(prompt="p", policy=FakeTime().policy(), query_fn=fake, probe_target=online)
    await drain(stream)
    assert stream.record.cost_usd == pytest.approx(0.75)


def missing_session() -> ResultError:
    return ResultError(
        "No conversation found with session ID: x",
        data={"is_error": True, "result": "No conversation found with session ID: x"},
        exit_code=1,
    )


def cost_state(sid: str, cost: float, tokens: int) -> dict[str, Any]:
    return {
        "type": "cost-state",
        "sessionId": sid,
        "totalCostUSD": cost,
        "modelUsage": {
            "claude-x": {
                "inputTokens": tokens,
                "outputTokens": 0,
                "cacheReadInputTokens": 0,
                "cacheCreationInputTokens": 0,
                "costUSD": cost,
            }
        },
    }


async def test_a_callers_resume_counts_only_this_calls_cost_from_the_store(
    online: tuple[str, int], tmp_path: Path
) -> None:
    store = InMemorySessionStore()
    key = {"project_key": project_key_for_directory(str(tmp_path)), "session_id": S1}
    await store.append(
        key,
        [{"type": "user", "uuid": "u1", "message": {"role": "user", "content": "hi"}}, cost_state(S1, 0.5, 100_000)],
    )  # type: ignore[arg-type]
    fake = FakeQuery([[init(S1), result(S1, cost=0.52, run_tokens=4000, total_tokens=104_000)]])
    options = ClaudeAgentOptions(cwd=str(tmp_path), resume=S1, session_store=store)
    stream = resilient_query(
        prompt="go on", options=options, policy=FakeTime().policy(), query_fn=fake, probe_target=online
    )
    await drain(stream)
    assert stream.record.cost_usd == pytest.approx(0.02)


async def test_a_callers_resume_counts_only_this_calls_cost_from_the_local_transcript(
    online: tuple[str, int], tmp_path: Path, isolated_home: Path
) -> None:
    project = isolated_home / ".claude" / "projects" / project_key_for_directory(str(tmp_path))
    project.mkdir(parents=True)
    lines = [
        {"type": "user", "uuid": "u1"},
        cost_state(S1, 0.1, 10_000),
        {"type": "user", "uuid": "u2"},
        cost_state(S1, 0.5, 100_000),
        {"type": "last-prompt", "sessionId": S1},
    ]
    (project / f"{S1}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    fake = FakeQuery([[init(S1), result(S1, cost=0.52, run_tokens=4000, total_tokens=104_000)]])
    stream = resilient_query(
        prompt="go on",
        options=ClaudeAgentOptions(cwd=str(tmp_path), resume=S1),
        policy=FakeTime().policy(),
        query_fn=fake,
        probe_target=online,
    )
    await drain(stream)
    assert stream.record.cost_usd == pytest.approx(0.02)


async def test_record_to_dict_is_json_ready(online: tuple[str, int]) -> None:
    fake = FakeQuery([[init(S1), *outage(S1)], [init(S1), result(S1)]])
    stream = resilient_query(prompt="p", policy=FakeTime().policy(), query_fn=fake, probe_target=online)
    await drain(stream)
    row = json.loads(json.dumps(stream.record.to_dict()))
    assert row["ok"] and row["resumed"] and len(row["attempts"]) == 2 and row["attempts"][0]["kind"] == "transient"


async def test_background_agents_make_several_results_and_every_one_passes(online: tuple[str, int]) -> None:
    # The main thread's first turn ends (result 1), a background worker's notification wakes it (result 2).
    fake = FakeQuery(
        [
            [
                init(S1),
                said("Dispatched.", S1),
                result(S1, cost=0.03, turns=2, text="Dispatched."),
                said("Final answer.", S1),
                result(S1, cost=0.05, turns=1, text="Final answer."),
            ]
        ]
    )
    stream = resilient_query(prompt="p", policy=FakeTime().policy(), query_fn=fake, probe_target=online)
    messages = await drain(stream)
    assert [m.result for m in messages if isinstance(m, ResultMessage)] == ["Dispatched.", "Final answer."]
    record = stream.record
    assert record.ok and len(record.attempts) == 1
    assert record.num_turns == 3 and record.cost_usd == pytest.approx(0.05), (
        "turns add up; cost is the last running total"
    )


async def test_a_failed_notification_turn_after_a_good_first_turn_is_resumed(online: tuple[str, int]) -> None:
    fake = FakeQuery(
        [
            [
                init(S1),
                said("Dispatched.", S1),
                result(S1, cost=0.03, turns=2, text="Dispatched."),
                *outage(S1, cost=0.04),
            ],
            [init(S1), said("Final answer.", S1), result(S1, cost=0.05, text="Final answer.")],
        ]
    )
    stream = resilient_query(prompt="p", policy=FakeTime().policy(), query_fn=fake, probe_target=online)
    messages = await drain(stream)
    assert [m.result for m in messages if isinstance(m, ResultMessage)] == ["Dispatched.", "Final answer."]
    assert fake.calls[1].options.resume == S1 and stream.record.ok and len(stream.record.attempts) == 2


async def test_cost_so_far_is_known_at_each_turn_end_before_the_run_ends(online: tuple[str, int]) -> None:
    # A budget checked between turns reads it at each result: the failed attempt's cost, then the resumed
    # attempt's turns as their running totals come (the restored part of the session counted once).
    fake = FakeQuery(
        [
            [init(S1), *outage(S1, cost=0.02, turns=1, run_tokens=1000, total_tokens=1000)],
            [
                init(S1),
                result(S1, cost=0.05, turns=1, run_tokens=1500, total_tokens=2500),
                result(S1, cost=0.09, turns=1, run_tokens=2500, total_tokens=3500),
            ],
        ]
    )
    stream = resilient_query(prompt="p", policy=FakeTime().policy(), query_fn=fake, probe_target=online)
    assert stream.cost_so_far == 0.0
    seen: list[float] = []
    async for message in stream:
        if type(message).__name__ == "ResultMessage":
            seen.append(stream.cost_so_far)
    assert seen == pytest.approx([0.05, 0.09])
    assert stream.cost_so_far == pytest.approx(stream.record.cost_usd) == pytest.approx(0.09)
