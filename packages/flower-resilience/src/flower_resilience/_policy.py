"""The retry policy: how many attempts, how long to back off, how long to wait for the network."""

from __future__ import annotations

import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import anyio

from ._classify import ErrorKind

__all__ = ["RESUME_PROMPT", "Resilience", "human_wait"]

# Deliberately free of any error detail: the model only needs to know it was cut off and should carry on.
# Whether it was ENOTFOUND or a 503 belongs in the attempt record, not in the context. It names nothing an
# app may not have (a workbench, files, a repository): any SDK app uses this default. An app that keeps its
# state somewhere the model should look passes its own (flower-cli names its workbench when the run has one).
RESUME_PROMPT = (
    "The previous round was interrupted before it finished. Check what is already done, continue from where "
    "it stopped, and do not start over."
)


def human_wait(seconds: float) -> str:
    """A wait as people say it: ``"45 s"``, ``"1.5 s"``, ``"60 min"``."""
    seconds = max(0.0, float(seconds))
    if seconds < 10 and seconds != int(seconds):
        return f"{seconds:.1f} s"
    if seconds < 60:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min"


@dataclass(frozen=True)
class Resilience:
    """When and how to retry a failed Claude Code run.

    ``max_attempts`` counts the first attempt. The backoff before attempt ``n + 1`` is
    ``min(base_delay * 2**(n-1), max_delay)`` with ±25 % jitter, so processes that lost the network together
    do not all come back in the same second; a server hint (``retry-after``) replaces it, capped at
    ``max_delay``.

    While the endpoint is unreachable the run waits for at most ``max_offline_wait`` seconds, probing it (DNS
    + TCP only, free): fast at first, then less and less often. The pause after the ``n``-th failed probe is
    ``probe_initial_interval * probe_growth**(n-1)`` with ±25 % jitter, up to ``probe_interval``; from there on
    it is exactly ``probe_interval``, so a long outage costs no more probes per minute than one every
    ``probe_interval``. With the defaults: 0.5, 0.6, 0.8, 1.0, 1.2, 1.5, 1.9, 2.4, 3.0, 3.7, 4.7, 5.8, 7.3, 9.1,
    11.4, 14.2, then 15 s — a probe gap stays near a quarter of the time offline, so an outage of a few seconds
    is noticed within about a second of its end.
    ``probe_initial_interval >= probe_interval`` gives a fixed schedule (probe every ``probe_interval``).

    When the probe saw the endpoint go and come back, the next attempt starts at once: the backoff exists to
    spare a server that is failing, and this one was simply unreachable. The backoff still applies when the
    probe found the endpoint up (the failure was something else), and after a rate limit or an overload (429,
    529, which an outage does not cure) or a server hint; the time spent offline counts toward it. See
    `retry_wait`.

    ``probe_initial_interval`` and ``probe_growth`` are keyword-only (added after the others, which keep their
    positions). ``sleep``, ``clock`` and ``rng`` are the seams for tests (and for embedding in a simulated
    clock); they take no part in equality.
    """

    enabled: bool = True
    max_attempts: int = 6
    base_delay: float = 4.0
    max_delay: float = 120.0
    probe_timeout: float = 5.0
    probe_interval: float = 15.0
    max_offline_wait: float = 3600.0
    retry_unknown: bool = True
    resume_prompt: str = RESUME_PROMPT
    sleep: Callable[[float], Awaitable[None]] = field(default=anyio.sleep, compare=False, repr=False)
    clock: Callable[[], float] = field(default=time.monotonic, compare=False, repr=False)
    rng: Callable[[], float] = field(default=random.random, compare=False, repr=False)
    probe_initial_interval: float = field(default=0.5, kw_only=True)
    probe_growth: float = field(default=1.25, kw_only=True)

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(
                f"Resilience.max_attempts must be at least 1 (it counts the first attempt), got {self.max_attempts}"
            )
        for name in ("base_delay", "max_delay", "probe_interval", "probe_initial_interval"):
            if getattr(self, name) < 0:
                raise ValueError(f"Resilience.{name} must not be negative, got {getattr(self, name)}")
        if self.probe_timeout <= 0:
            raise ValueError(f"Resilience.probe_timeout must be positive, got {self.probe_timeout}")
        if self.probe_growth < 1:
            raise ValueError(
                f"Resilience.probe_growth must be at least 1 (probes never speed up), got {self.probe_growth}"
            )

    def delay_for(self, attempt: int) -> float:
        """The jittered backoff after failed attempt number ``attempt`` (1-based)."""
        exponent = min(max(attempt, 1) - 1, 64)  # 2**64 * anything is far past any sane max_delay
        nominal = min(self.base_delay * 2.0**exponent, self.max_delay)
        return nominal * (0.75 + self.rng() * 0.5)

    def backoff(self, attempt: int, hint: float | None = None) -> float:
        """The wait before the next attempt: the server's hint when there is one (capped), else `delay_for`."""
        if hint is not None and hint >= 0:
            return min(hint, self.max_delay)
        return self.delay_for(attempt)

    def probe_wait(self, failed: int) -> float:
        """The pause after the ``failed``-th failed probe in a row (1-based), before the next probe.

        Below ``probe_interval`` it is jittered (±25 %), so processes that went offline in the same second
        drift apart and do not all find the endpoint back, and resume, in the same instant. At
        ``probe_interval`` it is exact: the steady rate never exceeds one probe per ``probe_interval``.
        """
        cap = self.probe_interval
        try:
            nominal = self.probe_initial_interval * self.probe_growth ** (max(failed, 1) - 1)
        except OverflowError:  # a huge growth: long past the cap
            return cap
        if nominal >= cap:
            return cap
        return min(nominal * (0.75 + self.rng() * 0.5), cap)

    def retry_wait(
        self,
        attempt: int,
        hint: float | None = None,
        *,
        offline_for: float | None = None,
        pushback: bool = False,
    ) -> float:
        """The wait before attempt ``attempt + 1``, once the probe has found the endpoint reachable.

        - ``offline_for is None``: the endpoint answered the first probe, so the failure was not the network
          being gone: the full `backoff` (the server's ``hint`` when there is one).
        - ``offline_for`` seconds unreachable, then back: no wait, the resume starts at once — unless the
          failure was the server pushing back (``pushback``: a rate limit or an overload) or it gave a hint;
          then what is left of that backoff after the time already spent offline.
        """
        nominal = self.backoff(attempt, hint)
        if offline_for is None:
            return nominal
        if pushback or (hint is not None and hint >= 0):
            return max(0.0, nominal - offline_for)
        return 0.0

    def should_retry(self, kind: ErrorKind) -> bool:
        return kind == "transient" or (kind == "unknown" and self.retry_unknown)
