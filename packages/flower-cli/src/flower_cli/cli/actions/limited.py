"""What a step stopped by a usage limit tells the person on its way out: when the limit resets and the command
that continues the same session then (``once`` and ``go`` each know theirs; the wake for ``go``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from flower_resilience import until_text

if TYPE_CHECKING:
    from ...runtime import StepResult

__all__ = ["continue_after"]


def continue_after(result: StepResult, command: str | None) -> str:
    """``; continue after 14:05 (in 6 h) with: <command>`` for a step a usage limit stopped ("" otherwise)."""
    if result.limited_until is None:
        return ""
    how = f"with: {command}" if command else "by running the same command again"
    return f"; continue after {until_text(result.limited_until)} {how}"
