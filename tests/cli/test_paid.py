"""`PaidLedger`: what attempts that ended without the harness's figure paid, estimated from the usage they streamed."""

from __future__ import annotations

import dataclasses

import pytest
from claude_agent_sdk import AssistantMessage, ResultMessage, TextBlock

from flower_cli.runtime import StepResult
from flower_cli.runtime._paid import PaidLedger, estimate_usd, rates_for
from flower_resilience import Attempt, AttemptRecord


def _said(request: str, usage: dict[str, int], model: str = "claude-sonnet-4-5") -> AssistantMessage:
    return AssistantMessage(content=[TextBlock("x")], model=model, usage=usage, message_id=request)


def _attempt(number: int, *, reported: float | None, cost: float = 0.0, error: str | None = "died") -> Attempt:
    return Attempt(
        number=number, error=error, kind="unknown" if error else None, wait_s=0.0, resumed=number > 1,
        session_id="s", cost_usd=cost, num_turns=0, reported_cost_usd=reported,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("model", "input_rate"),
    [
        ("claude-opus-4-5-20251101", 5.0),
        ("claude-opus-4-1", 15.0),
        ("claude-sonnet-4-5", 3.0),
        ("claude-haiku-4-5", 1.0),
        ("claude-3-5-haiku-latest", 0.8),
        ("some-gateway-model", 3.0),
        (None, 3.0),
    ],
)
def test_rates_by_family(model: str | None, input_rate: float) -> None:
    assert rates_for(model).input == input_rate


def test_estimate_counts_every_kind_of_token() -> None:
    usage = {
        "input_tokens": 1_000_000,
        "output_tokens": 1_000_000,
        "cache_creation_input_tokens": 1_000_000,
        "cache_read_input_tokens": 1_000_000,
    }
    assert estimate_usd("claude-sonnet-4-5", usage) == pytest.approx(3 + 15 + 3.75 + 0.30)
    assert estimate_usd("claude-sonnet-4-5", {"input_tokens": -5, "output_tokens": True}) == 0.0


def test_a_request_counts_once_with_its_largest_figures() -> None:
    ledger = PaidLedger()
    ledger.saw(_said("msg_1", {"input_tokens": 100_000, "output_tokens": 1}), 1)
    ledger.saw(_said("msg_1", {"input_tokens": 100_000, "output_tokens": 400}), 1)  # its next block
    ledger.saw(_said("msg_2", {"input_tokens": 50_000}), 2)
    ledger.saw(ResultMessage("success", 1, 1, False, 1, "s", total_cost_usd=9.0), 2)  # not a request
    assert ledger.estimate(1) == pytest.approx(estimate_usd("sonnet", {"input_tokens": 100_000, "output_tokens": 400}))
    assert ledger.estimate(2) == pytest.approx(0.15) and ledger.estimate(3) == 0.0


def test_settle_adds_only_attempts_without_the_harness_figure() -> None:
    ledger = PaidLedger()
    ledger.saw(_said("msg_1", {"input_tokens": 100_000}), 1)  # died without a result: estimated
    ledger.saw(_said("msg_2", {"input_tokens": 100_000}), 2)  # reported by the harness: left alone
    ledger.saw(_said("msg_3", {"input_tokens": 100_000}), 3)  # closed by flower (a handoff): left alone
    record = AttemptRecord()
    record.attempts += [
        _attempt(1, reported=None),
        _attempt(2, reported=0.42, cost=0.42, error=None),
        dataclasses.replace(_attempt(3, reported=None, error=None), closed=True),
    ]
    result = StepResult("once", cost_usd=0.42, attempt_log=[{"number": n} for n in range(4)])
    added = ledger.settle(result, record)
    assert added == pytest.approx(0.3)
    assert result.cost_usd == pytest.approx(0.72) and result.cost_estimated_usd == pytest.approx(0.3)
    assert result.attempt_log[0] == {"number": 0}, "an earlier launch's rows are not this record's"
    assert result.attempt_log[1]["cost_estimated_usd"] == pytest.approx(0.3) == result.attempt_log[1]["cost_usd"]
    assert "cost_estimated_usd" not in result.attempt_log[2] and "cost_estimated_usd" not in result.attempt_log[3]
    assert result.row("r")["cost_estimated_usd"] == pytest.approx(0.3)
    assert PaidLedger().settle(StepResult("s"), AttemptRecord()) == 0.0
