"""When a session hands off: the window, the handoff point, the warning point and the generation brake."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cached_property

from ._window import resolve_window

__all__ = ["CHARS_PER_TOKEN", "HandoffPolicy"]

_MIN_AT = 10_000
_MIN_WARN = 1_000
_WARN_BEFORE = 20_000
_AUTO_HEADROOM_FLOOR = 50_000
# Characters per token when a token count becomes a character budget: 3, not the ~4 of English prose, because a
# session's history is mostly code, paths and tool output, which tokenize denser. Too many characters per token
# would let a fitted history overflow after all.
CHARS_PER_TOKEN = 3


@dataclass(frozen=True)
class HandoffPolicy:
    """When to hand off. ``window=None`` resolves it (`resolve_window`) when first asked; ``headroom=0`` means
    automatic: ``max(50_000, window // 4)`` (a 200k window hands off at 150k, 1M at 750k).

    ``at = max(10_000, window - headroom)``; ``warn_at = max(1_000, at - 20_000)``; at most
    ``max_generations`` handoffs in one step (then it stops with a diagnostic instead of burning money on
    sessions that fill up at start).
    """

    enabled: bool = True
    window: int | None = None
    headroom: int = 0
    max_generations: int = 8

    def __post_init__(self) -> None:
        if self.window is not None and self.window <= 0:
            raise ValueError(f"the handoff window must be a positive token count, not {self.window}")
        if self.headroom < 0:
            raise ValueError(f"the handoff headroom must be 0 (automatic) or positive, not {self.headroom}")
        if self.max_generations < 1:
            raise ValueError(f"max_generations must be at least 1, not {self.max_generations}")

    def resolved(
        self, *, model: str | None = None, base_url: str | None = None, env: Mapping[str, str] | None = None
    ) -> HandoffPolicy:
        """A copy with the window filled in from the precedence chain (unchanged when already set)."""
        if self.window is not None:
            return self
        return replace(self, window=resolve_window(model=model, base_url=base_url, env=env).tokens)

    @cached_property
    def window_tokens(self) -> int:
        """The window. An unresolved policy resolves it (the environment, the calibration file) once, the first
        time it is asked, not again on every reading of `at` or `warn_at`; `resolved` gives a copy that also
        knows the model."""
        return self.window if self.window is not None else resolve_window().tokens

    @property
    def headroom_tokens(self) -> int:
        if self.headroom:
            return self.headroom
        return max(_AUTO_HEADROOM_FLOOR, self.window_tokens // 4)

    @property
    def at(self) -> int:
        """The main-thread context at which the step hands off."""
        return max(_MIN_AT, self.window_tokens - self.headroom_tokens)

    @property
    def warn_at(self) -> int:
        """The context at which a "handoff is near" warning is shown (once per generation)."""
        return max(_MIN_WARN, self.at - _WARN_BEFORE)

    @property
    def load_budget(self) -> int:
        """The characters a resumed session's history may send (the load-time rewrite fits it to this): the
        warning point in characters, so a resumed session starts below it, with room to work before its
        handoff, whether or not handoffs are enabled."""
        return self.warn_at * CHARS_PER_TOKEN
