"""The policy: its defaults (the original flower's), the jittered backoff and its bounds, server hints, the probe
schedule, the wait after an outage, the resume prompt."""

from __future__ import annotations

import dataclasses
import random
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flower_resilience import RESUME_PROMPT, Resilience, human_wait


def test_defaults_are_the_seeds() -> None:
    """The defaults are the original flower's (docs/compatibility.md), plus the fast first probes."""
    policy = Resilience()
    assert (policy.enabled, policy.max_attempts, policy.base_delay, policy.max_delay) == (True, 6, 4.0, 120.0)
    assert (policy.probe_timeout, policy.probe_interval, policy.max_offline_wait, policy.retry_unknown) == (
        5.0,
        15.0,
        3600.0,
        True,
    )
    assert policy.resume_prompt == RESUME_PROMPT
    assert (policy.probe_initial_interval, policy.probe_growth) == (0.5, 1.25)


def test_resume_prompt_says_continue_and_carries_no_error_detail() -> None:
    text = RESUME_PROMPT.lower()
    assert "interrupted" in text and "continue" in text and "start over" in text
    assert not re.search(r"error|econn|\d{3}|api|network|timeout|refused", text), RESUME_PROMPT


def test_the_default_resume_prompt_names_nothing_an_sdk_app_may_not_have() -> None:
    # Any SDK app uses this default; a workbench, a repository or a notes folder exist only in some.
    assert not re.search(r"workbench|repositor|\bgit\b|notes|artifacts|on disk|\.flower", RESUME_PROMPT.lower()), (
        RESUME_PROMPT
    )


def test_the_new_fields_leave_old_constructions_as_they_were() -> None:
    # The first nine fields keep their positional order (the newer ones are keyword-only) ...
    positional = Resilience(True, 3, 1.0, 10.0, 2.0, 0.2, 30.0, False, "go on")
    assert (positional.max_attempts, positional.probe_interval, positional.resume_prompt) == (3, 0.2, "go on")
    # ... and a probe_interval set below the fast start still means "probe every probe_interval".
    assert [positional.probe_wait(n) for n in range(1, 6)] == [0.2] * 5
    assert dataclasses.replace(Resilience(), resume_prompt="x").probe_growth == 1.25


# --- the probe schedule ------------------------------------------------------------------------------------


def test_probes_start_fast_and_slow_down_to_probe_interval() -> None:
    policy = Resilience(rng=lambda: 0.5)
    waits = [policy.probe_wait(n) for n in range(1, 20)]
    assert waits == pytest.approx(
        [
            0.5,
            0.625,
            0.78125,
            0.9765625,
            1.220703125,
            1.52587890625,
            1.9073486328125,
            2.384185791015625,
            2.9802322387695312,
            3.725290298461914,
            4.656612873077393,
            5.820766091346741,
            7.275957614183426,
            9.094947017729282,
            11.368683772161603,
            14.210854715202004,
            15,
            15,
            15,
        ]
    )
    assert Resilience(probe_growth=2.0, rng=lambda: 0.5).probe_wait(6) == 15.0  # 0.5·2⁵ = 16, capped


@given(failed=st.integers(min_value=1, max_value=10_000), r=st.floats(min_value=0.0, max_value=1.0, exclude_max=True))
def test_probe_waits_are_jittered_below_the_cap_and_exact_at_it(failed: int, r: float) -> None:
    policy = Resilience(rng=lambda: r)
    nominal = 0.5 * 1.25 ** min(failed - 1, 100)
    wait = policy.probe_wait(failed)
    if nominal >= 15.0:
        assert wait == 15.0
    else:
        assert 0.75 * nominal - 1e-9 <= wait <= min(1.25 * nominal, 15.0) + 1e-9


def test_a_fixed_schedule_when_the_start_is_not_faster_than_probe_interval() -> None:
    policy = Resilience(probe_initial_interval=15.0, rng=random.random)
    assert {policy.probe_wait(n) for n in range(1, 50)} == {15.0}
    assert Resilience(probe_growth=1e300).probe_wait(200) == 15.0  # no overflow


def _probe_times(policy: Resilience, seconds: float) -> list[float]:
    """When probes happen in an outage of ``seconds``, counted from the first probe (probes take no time)."""
    times, now, failed = [0.0], 0.0, 0
    while True:
        failed += 1
        now += policy.probe_wait(failed)
        if now > seconds:
            return times
        times.append(now)


@pytest.mark.parametrize("seed", range(20))
def test_a_long_outage_costs_no_more_probes_per_minute_than_the_fixed_15_s_schedule(seed: int) -> None:
    new = _probe_times(Resilience(rng=random.Random(seed).random), 3600)
    old = _probe_times(Resilience(probe_initial_interval=15.0), 3600)
    per_minute = lambda times, minute: sum(minute * 60 <= t < (minute + 1) * 60 for t in times)  # noqa: E731 - a one-line helper read beside its use
    # The fast start spends its extra probes in the first minute (and is at 15 s within the second) ...
    assert per_minute(new, 0) <= 16 and per_minute(new, 1) <= 5 and per_minute(old, 0) == 4
    # ... after that, never more per minute than before.
    assert all(per_minute(new, m) <= per_minute(old, m) == 4 for m in range(2, 60))
    assert len(new) - len(old) <= 12


def test_processes_that_went_offline_together_spread_out() -> None:
    arrivals = {round(_probe_times(Resilience(rng=random.Random(seed).random), 10)[-1], 3) for seed in range(20)}
    assert len(arrivals) > 10, "identical schedules would bring every process back in the same instant"


# --- the wait before the next attempt ----------------------------------------------------------------------


def test_retry_wait_backs_off_when_the_endpoint_never_looked_down() -> None:
    policy = Resilience(rng=lambda: 0.5)
    assert policy.retry_wait(1) == 4.0 and policy.retry_wait(2) == 8.0
    assert policy.retry_wait(1, hint=30.0) == 30.0


def test_retry_wait_is_zero_once_the_endpoint_is_back_after_an_outage() -> None:
    policy = Resilience(rng=lambda: 0.5)
    assert policy.retry_wait(1, offline_for=4.2) == 0.0
    assert policy.retry_wait(3, offline_for=0.01) == 0.0


def test_retry_wait_keeps_what_a_rate_limit_or_a_hint_still_asks_for_after_an_outage() -> None:
    policy = Resilience(rng=lambda: 0.5)
    assert policy.retry_wait(1, offline_for=1.5, pushback=True) == pytest.approx(2.5)  # 4 s, 1.5 s of it offline
    assert policy.retry_wait(1, offline_for=10.0, pushback=True) == 0.0
    assert policy.retry_wait(1, hint=30.0, offline_for=12.0) == pytest.approx(18.0)
    assert policy.retry_wait(1, hint=5 * 3600, offline_for=20.0) == pytest.approx(100.0)  # capped at max_delay first


@pytest.mark.parametrize(
    ("attempt", "nominal"), [(1, 4), (2, 8), (3, 16), (4, 32), (5, 64), (6, 120), (7, 120), (500, 120)]
)
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
    [
        ({"max_attempts": 0}, "max_attempts"),
        ({"base_delay": -1}, "base_delay"),
        ({"probe_timeout": 0}, "probe_timeout"),
        ({"probe_initial_interval": -0.5}, "probe_initial_interval"),
        ({"probe_growth": 0.5}, "probe_growth"),
    ],
)
def test_bad_values_get_a_clear_error(kwargs: dict[str, float], fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment):
        Resilience(**kwargs)  # type: ignore[arg-type]


def test_policies_compare_by_value_not_by_seams() -> None:
    assert Resilience(rng=lambda: 0.1) == Resilience()
    assert Resilience(max_attempts=3) != Resilience()


@pytest.mark.parametrize(
    ("seconds", "text"), [(0, "0 s"), (1.5, "1.5 s"), (45, "45 s"), (60, "1 min"), (3600, "60 min")]
)
def test_human_wait(seconds: float, text: str) -> None:
    assert human_wait(seconds) == text
