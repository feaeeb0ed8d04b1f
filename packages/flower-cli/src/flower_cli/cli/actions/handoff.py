"""``--window`` / ``--no-handoff`` (``go``, ``once``, ``run``): when a session hands off to a fresh one."""

from __future__ import annotations

from ..._shared.exits import Exit, ExitCode
from ...runtime import HandoffPolicy, parse_token_count

__all__ = ["handoff_policy"]


def handoff_policy(window: str | None, no_handoff: bool) -> HandoffPolicy:
    """``--window`` / ``--no-handoff`` as a policy, or a one-line usage `Exit` for a wrong value."""

    if no_handoff:
        if window is not None:
            raise Exit(
                ExitCode.USAGE, "--window sets when a session hands off; it means nothing with --no-handoff (drop one)."
            )
        return HandoffPolicy(enabled=False)
    if window is None:
        return HandoffPolicy()  # the window comes from FLOWER_WINDOW, the calibration file or the model name
    try:
        return HandoffPolicy(window=parse_token_count(window))
    except ValueError as exc:
        raise Exit(ExitCode.USAGE, f"--window: {exc}.") from exc
