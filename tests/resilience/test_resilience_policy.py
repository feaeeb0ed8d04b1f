"""The policy: the seed's defaults, the jittered backoff and its bounds, server hints, the resume prompt."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flower_resilience import RESUME_PROMPT, Resilience, human_wait


def test_defaults_are_the_seeds() -> None:
    policy = Resilience()
    assert (policy.enabled, policy.max_attempts, policy.base_delay, policy.max_delay) == (True, 6, 4.0, 120.0)
    assert (policy.probe_timeout, policy.probe_interval, policy.max_offline_wait, policy.retry_unknown) == (5.0, 15.0, 3600.0, True)
    assert policy.resume_prompt == RESUME_PROMPT


def test_resume_prompt_says_continue_and_carries_no_error_detail() -> None:
    text = RESUME_PROMPT.lower()
    assert "interrupted" in text and "workbench" in text and "continue" in text and "start over" in text
    assert not re.search(r"error|econn|\d{3}|api|network|timeout|refused", text), RESUME_PROMPT


@pytest.mark.parametrize(("attempt", "nominal"), [(1, 4), (2, 8), (3, 16), (4, 32), (5, 64), (6, 120), (7, 120), (500, 120)])
def test_delay_for_is_capped_exponential_with_25_percent_jitter(attempt: int, nominal: float) -> None:
    low = Resilience(rng=lambda: 0.0).delay_for(attempt)
    mid = Resilience(rng=lambda: 0.5).delay_for(attempt)
    high = Resilience(rng=lambda: 0.999999).delay_for(attempt)
    assert low == pytest.approx(nominal * 0.75)
    assert mid == pytest.approx(nominal)
    assert high == pytest.approx(nominal * 1.25, rel=1e-5)


@given(
    attempt=st.integers(min_value=1, max_value=10_000),
    base=st.floats(min_value=0.0, max_value=100.0),
    cap=st.floats(min_value=0.0, max_value=1000.0),
    r=st.floats(min_value=0.0, max_value=1.0, exclude_max=True),
)
def test_delay_for_stays_within_bounds(attempt: int, base: float, cap: float, r: float) -> None:
    delay = Resilience(base_delay=base, max_delay=cap, rng=lambda: r).delay_for(attempt)
    nominal = min(base * 2.0 ** min(attempt - 1, 64), cap)
    assert 0.75 * nominal - 1e-9 <= delay <= 1.25 * nominal + 1e-9
    assert delay <= 1.25 * cap + 1e-9


def test_real_jitter_spreads_the_waits() -> None:
    delays = {round(Resilience().delay_for(3), 6) for _ in range(50)}
    assert len(delays) > 10 and all(12 <= d <= 20 for d in delays)


def test_server_hint_wins_but_is_capped() -> None:
    policy = Resilience(rng=lambda: 0.5)
    assert policy.backoff(1, hint=7.0) == 7.0
    assert policy.backoff(1, hint=0.0) == 0.0
    assert policy.backoff(1, hint=5 * 3600) == 120.0
    assert policy.backoff(2, hint=None) == 8.0


def test_should_retry() -> None:
    assert Resilience().should_retry("transient")
    assert Resilience().should_retry("unknown")
    assert not Resilience(retry_unknown=False).should_retry("unknown")
    assert not Resilience().should_retry("fatal")


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [({"max_attempts": 0}, "max_attempts"), ({"base_delay": -1}, "base_delay"), ({"probe_timeout": 0}, "probe_timeout")],
)
def test_bad_values_get_a_clear_error(kwargs: dict[str, float], fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment):
        Resilience(**kwargs)  # type: ignore[arg-type]


def test_policies_compare_by_value_not_by_seams() -> None:
    assert Resilience(rng=lambda: 0.1) == Resilience()
    assert Resilience(max_attempts=3) != Resilience()


@pytest.mark.parametrize(("seconds", "text"), [(0, "0 s"), (1.5, "1.5 s"), (45, "45 s"), (60, "1 min"), (3600, "60 min")])
def test_human_wait(seconds: float, text: str) -> None:
    assert human_wait(seconds) == text
