"""Recognising a context overflow in an API error, and the limit it names. A session that overflowed cannot
even write its handoff; the limit calibrates the window of later runs."""

from __future__ import annotations

import re

__all__ = ["OVERFLOW_WHY", "is_overflow", "overflow_limit"]

# Why a degraded handoff was built, for the common cases (the caller may give any other reason).
OVERFLOW_WHY = "the context was too full to run even one more round to write it"

_OVERFLOW = re.compile(
    r"prompt is too long"
    r"|context[ _]length[ _]exceeded"
    r"|maximum context length"
    r"|exceeds? (?:the |your )?(?:model'?s? )?context (?:window|limit|length)"
    r"|input length and [`'\"]?max_tokens[`'\"]? exceed"
    r"|too many total text bytes"
    r"|context window (?:is )?(?:full|exceeded)"
    r"|上下文(?:长度)?(?:超过|超出|超限)|超出(?:了)?(?:最大)?上下文",
    re.IGNORECASE,
)

# "prompt is too long: 210000 tokens > 200000 maximum" — the API names the limit it enforced.
_LIMIT = re.compile(r"(\d[\d,_]*)\s*tokens?\s*>\s*(\d[\d,_]*)\s*(?:token\s*)?maximum", re.IGNORECASE)


def is_overflow(*texts: str | None) -> bool:
    """Whether any of ``texts`` (an API error message, a result's error, a synthetic error row) says the
    request no longer fits the context window. Such a session cannot even write its handoff."""
    return any(text and _OVERFLOW.search(text) for text in texts)


def overflow_limit(*texts: str | None) -> int:
    """The context limit an overflow error names (``… > 200000 maximum``), or 0 when none does."""
    for text in texts:
        match = _LIMIT.search(text or "")
        if match:
            return int(re.sub(r"[,_]", "", match.group(2)))
    return 0
