"""What a failed launch paid: an estimate from the usage its answered requests reported.

Why: the harness reports what a process cost only in a ``ResultMessage``. A launch that fails before one — killed,
a crash mid-turn, its output refused by the SDK — still had its answered requests billed, yet its attempt's
``cost_usd`` was 0 and the manifest said the step cost nothing. Each answered request reaches flower as an
``AssistantMessage`` with the API's ``usage``, so the cost is estimated from those: tokens × the model family's
list price, recorded as paid (added to the step's ``cost_usd``) and kept apart as ``cost_estimated_usd`` (on the
step and on the attempt) so a reader can tell measured from estimated.

Limits, all erring low: only failed attempts without any result are estimated (a result is the harness's own
figure; a launch flower closed itself — a handoff, a human interrupt — stays as reported); a message carries the
usage known when its block streamed (the input whole, the output as counted so far); and requests the SDK never
streamed to flower (after its reader failed on an oversized line) cannot be seen — the 256 MiB buffer
(``_options.MAX_BUFFER_SIZE``) makes that failure rare, and it is fatal, so it is not repeated.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ._result import StepResult

__all__ = ["PaidLedger", "Rates", "estimate_usd", "rates_for"]


@dataclass(frozen=True, slots=True)
class Rates:
    """USD per million tokens: input, output, cache write (5-minute), cache read."""

    input: float
    output: float
    cache_write: float
    cache_read: float


# Anthropic's list prices per model family, newest names first (a model id matches the first fragment it holds).
# An unknown model is priced as a Sonnet: the estimate is marked as one, never taken for the harness's figure.
_FAMILIES: tuple[tuple[tuple[str, ...], Rates], ...] = (
    (("opus-4-5", "opus-4-6", "opus-4-7", "opus-5"), Rates(5.0, 25.0, 6.25, 0.50)),
    (("opus",), Rates(15.0, 75.0, 18.75, 1.50)),
    (("haiku-4", "haiku-5"), Rates(1.0, 5.0, 1.25, 0.10)),
    (("3-5-haiku", "haiku-3-5"), Rates(0.80, 4.0, 1.0, 0.08)),
    (("haiku",), Rates(0.25, 1.25, 0.30, 0.03)),
    (("sonnet",), Rates(3.0, 15.0, 3.75, 0.30)),
)
_DEFAULT = Rates(3.0, 15.0, 3.75, 0.30)


def rates_for(model: str | None) -> Rates:
    """The list price of ``model``'s family (a Sonnet's for a model this table does not know)."""
    name = (model or "").lower()
    for fragments, rates in _FAMILIES:
        if any(f in name for f in fragments):
            return rates
    return _DEFAULT


def _tokens(usage: Mapping[str, Any], key: str) -> int:
    value = usage.get(key)
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else 0


def estimate_usd(model: str | None, usage: Mapping[str, Any]) -> float:
    """One request's cost at list price, from the API's ``usage`` (input, output, cache creation and read)."""
    rates = rates_for(model)
    return (
        _tokens(usage, "input_tokens") * rates.input
        + _tokens(usage, "output_tokens") * rates.output
        + _tokens(usage, "cache_creation_input_tokens") * rates.cache_write
        + _tokens(usage, "cache_read_input_tokens") * rates.cache_read
    ) / 1_000_000


class PaidLedger:
    """The answered requests one launch's attempts streamed, attempt by attempt, to price those left unreported.

    ``saw(message, attempt)`` for every message the launch streams (``attempt``: its number, 1-based); then
    ``settle(result, record)`` once the launch's record is complete.
    """

    def __init__(self) -> None:
        # attempt -> request id -> (model, usage). The harness streams a request's content blocks as several
        # messages that share its id and usage: a request counts once, with the largest figures it reported.
        self._seen: dict[int, dict[str, tuple[str | None, dict[str, int]]]] = {}

    def saw(self, message: Any, attempt: int) -> None:
        usage = getattr(message, "usage", None)
        request = getattr(message, "message_id", None) or getattr(message, "uuid", None)
        if type(message).__name__ != "AssistantMessage" or not isinstance(usage, Mapping) or not request:
            return
        requests = self._seen.setdefault(attempt, {})
        _, known = requests.get(request, (None, {}))
        merged = {k: max(known.get(k, 0), _tokens(usage, k)) for k in {*known, *usage} if isinstance(k, str)}
        requests[request] = (getattr(message, "model", None), merged)

    def estimate(self, attempt: int) -> float:
        """What attempt ``attempt``'s answered requests cost at list price (0.0 when none streamed)."""
        return round(sum(estimate_usd(model, usage) for model, usage in self._seen.get(attempt, {}).values()), 6)

    def settle(self, result: StepResult, record: Any) -> float:
        """Add to ``result`` what the record's failed attempts without any result paid; returns the sum.

        The record's attempts are the last ``len(record.attempts)`` rows of ``result.attempt_log`` (`absorb`
        appended them); each estimated row gets ``cost_usd`` and ``cost_estimated_usd``.
        """
        attempts = list(getattr(record, "attempts", ()))
        rows = result.attempt_log[len(result.attempt_log) - len(attempts) :] if attempts else []
        added = 0.0
        for attempt, row in zip(attempts, rows):
            if attempt.error is None or attempt.reported_cost_usd is not None or attempt.cost_usd:
                continue  # not a failure (a success, or a launch flower closed itself), or the harness's own figure
            paid = self.estimate(attempt.number)
            if paid > 0:
                row["cost_usd"] = paid
                row["cost_estimated_usd"] = paid
                added += paid
        if added:
            result.cost_usd = round(result.cost_usd + added, 6)
            result.cost_estimated_usd = round(result.cost_estimated_usd + added, 6)
        return added
