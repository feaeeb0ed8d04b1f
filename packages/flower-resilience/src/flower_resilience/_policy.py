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
# Whether it was ENOTFOUND or a 503 belongs in the attempt record, not in the context.
RESUME_PROMPT = (
    "The previous round was interrupted before it finished. Check what is already on disk in the "
    "workbench, continue from where it stopped, and do not start over."
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
    ``max_delay``. While the endpoint is unreachable the run waits, probing every ``probe_interval`` seconds
    (DNS + TCP only, free), for at most ``max_offline_wait`` seconds.

    ``sleep``, ``clock`` and ``rng`` are the seams for tests (and for embedding in a simulated clock); they
    take no part in equality.
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

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"Resilience.max_attempts must be at least 1 (it counts the first attempt), got {self.max_attempts}")
        for name in ("base_delay", "max_delay", "probe_interval"):
            if getattr(self, name) < 0:
                raise ValueError(f"Resilience.{name} must not be negative, got {getattr(self, name)}")
        if self.probe_timeout <= 0:
            raise ValueError(f"Resilience.probe_timeout must be positive, got {self.probe_timeout}")

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

    def should_retry(self, kind: ErrorKind) -> bool:
        return kind == "transient" or (kind == "unknown" and self.retry_unknown)
