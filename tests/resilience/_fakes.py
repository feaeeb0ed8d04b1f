"""Test doubles for the retry loop's unit tests: a scripted stand-in for ``claude_agent_sdk.query`` and a
virtual clock. The loop's e2e tests run the real binary; these exist so every branch runs in milliseconds.
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.lowlevel
from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    ProcessError,
    ResultError,
    ResultMessage,
    SystemMessage,
    TextBlock,
    ToolUseBlock,
)

from flower_resilience import Resilience


class FakeTime:
    """``clock`` and ``sleep`` for `Resilience`: sleeping advances the clock instantly and is recorded."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []
        self.on_sleep: list[Any] = []  # callables run after the n-th sleep (index = n)

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        index = len(self.sleeps) - 1
        if index < len(self.on_sleep) and self.on_sleep[index] is not None:
            self.on_sleep[index]()
        await anyio.lowlevel.checkpoint()

    def policy(self, **overrides: Any) -> Resilience:
        values: dict[str, Any] = {"sleep": self.sleep, "clock": self.clock, "rng": lambda: 0.5}
        values.update(overrides)
        return Resilience(**values)


def init(sid: str) -> SystemMessage:
    return SystemMessage(subtype="init", data={"type": "system", "subtype": "init", "session_id": sid})


def said(text: str, sid: str) -> AssistantMessage:
    return AssistantMessage(content=[TextBlock(text)], model="claude-scripted", session_id=sid)


def tool(command: str, sid: str) -> AssistantMessage:
    return AssistantMessage(
        content=[ToolUseBlock("toolu_1", "Bash", {"command": command})], model="claude-scripted", session_id=sid
    )


def notice(text: str, sid: str, error: str = "server_error") -> AssistantMessage:
    """The synthetic API-error message the harness writes when a request fails."""
    return AssistantMessage(content=[TextBlock(text)], model="<synthetic>", session_id=sid, error=error)  # type: ignore[arg-type]


def usage(tokens: int) -> dict[str, int]:
    return {"input_tokens": tokens, "output_tokens": 0, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}


def model_usage(tokens: int, cost: float) -> dict[str, Any]:
    return {
        "claude-scripted": {
            "inputTokens": tokens,
            "outputTokens": 0,
            "cacheReadInputTokens": 0,
            "cacheCreationInputTokens": 0,
            "costUSD": cost,
        }
    }


def result(
    sid: str,
    *,
    ok: bool = True,
    cost: float = 0.01,
    turns: int = 1,
    text: str = "done",
    status: int | None = None,
    run_tokens: int | None = None,
    total_tokens: int | None = None,
    subtype: str = "success",
) -> ResultMessage:
    return ResultMessage(
        subtype=subtype,
        duration_ms=10,
        duration_api_ms=5,
        is_error=not ok,
        num_turns=turns,
        session_id=sid,
        total_cost_usd=cost,
        usage=usage(run_tokens) if run_tokens is not None else None,
        model_usage=model_usage(total_tokens, cost) if total_tokens is not None else None,
        result=text,
        api_error_status=status,
        terminal_reason="completed" if ok else "api_error",
    )


def result_error(res: ResultMessage) -> ResultError:
    data = {
        "type": "result",
        "subtype": res.subtype,
        "is_error": True,
        "result": res.result,
        "session_id": res.session_id,
        "api_error_status": res.api_error_status,
        "terminal_reason": res.terminal_reason,
        "total_cost_usd": res.total_cost_usd,
    }
    return ResultError(f"Claude Code returned an error result: {res.result}", data=data, exit_code=1)


def outage(sid: str, *, cost: float = 0.02, turns: int = 2, **kw: Any) -> list[Any]:
    """What the harness yields when the server goes away mid-run: notice, error result, then ResultError."""
    text = "API Error: Connection dropped (ECONNRESET). Check the gateway set in ANTHROPIC_BASE_URL, then try again."
    res = result(sid, ok=False, cost=cost, turns=turns, text=text, **kw)
    return [notice(text, sid), res, result_error(res)]


@dataclass
class Call:
    prompt: Any
    options: ClaudeAgentOptions
    closed: bool = False
    finished: bool = False


@dataclass
class FakeQuery:
    """``query_fn`` that plays one scripted run per call. A run is a list of messages; an exception in it
    is raised at that point (as the SDK raises ResultError after an error result)."""

    runs: list[list[Any]]
    calls: list[Call] = field(default_factory=list)

    def __call__(self, *, prompt: Any, options: ClaudeAgentOptions) -> AsyncIterator[Any]:
        assert self.runs, "the fake harness was called more often than scripted"
        run = self.runs.pop(0)
        call = Call(prompt, options)
        self.calls.append(call)
        return self._play(run, call)

    async def _play(self, run: list[Any], call: Call) -> AsyncIterator[Any]:
        try:
            for item in run:
                await anyio.lowlevel.checkpoint()
                if isinstance(item, BaseException):
                    raise item
                yield item
            call.finished = True
        finally:
            call.closed = True


def crash(message: str = "Command failed with exit code 1", exit_code: int = 1) -> ProcessError:
    return ProcessError(message, exit_code=exit_code, stderr="")


@contextmanager
def listening() -> Iterator[tuple[str, int]]:
    """A real TCP listener on loopback: the probe's "online"."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        yield "127.0.0.1", server.getsockname()[1]


def closed_port() -> tuple[str, int]:
    """A loopback port with nothing listening: the probe's "offline" (refused at once)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return "127.0.0.1", sock.getsockname()[1]
