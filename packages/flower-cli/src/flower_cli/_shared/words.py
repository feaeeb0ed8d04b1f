"""Counted nouns in English: "1 turn", "2 turns", "1 retry", "3 retries" — one spelling for every message."""

from __future__ import annotations

__all__ = ["counted"]


def counted(n: int, one: str, many: str | None = None) -> str:
    """``n`` and the noun, singular for exactly one: ``counted(1, "turn")`` → "1 turn",
    ``counted(2, "retry", "retries")`` → "2 retries" (``many`` defaults to ``one`` + "s")."""
    return f"{n} {one if n == 1 else (many or one + 's')}"
