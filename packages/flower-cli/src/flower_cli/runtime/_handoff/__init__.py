"""Handoff instead of compaction: when a session's context nears the window, it writes a five-part handoff and
a fresh session takes the step over from it.

One job per module: where the window comes from and what real overflows taught (`_window`), when to hand off
(`_policy`), recognising an overflow (`_overflow`), the document (`_document`), keeping it on disk (`_save`),
and one step's handoffs as the Runtime runs them (`_loop`). Names are imported on first use (see
`flower_cli._shared.lazy`): the window and the policy do not load the loop's anyio.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..._shared.lazy import lazy_exports

__all__ = [
    "DEFAULT_WINDOW",
    "HANDOFF_PROMPT",
    "OVERFLOW_WHY",
    "SECTIONS",
    "TITLES",
    "Decision",
    "Handoff",
    "HandoffLoop",
    "HandoffPolicy",
    "QuietRound",
    "Window",
    "calibration_path",
    "degraded",
    "guess_window",
    "handoff_prompt",
    "is_overflow",
    "overflow_limit",
    "parse_token_count",
    "record_overflow",
    "resolve_window",
    "safe_step_name",
    "save",
]

_HOMES = {
    "DEFAULT_WINDOW": "_window",
    "HANDOFF_PROMPT": "_document",
    "OVERFLOW_WHY": "_overflow",
    "SECTIONS": "_document",
    "TITLES": "_document",
    "Decision": "_loop",
    "Handoff": "_document",
    "HandoffLoop": "_loop",
    "HandoffPolicy": "_policy",
    "QuietRound": "_loop",
    "Window": "_window",
    "calibration_path": "_window",
    "degraded": "_document",
    "guess_window": "_window",
    "handoff_prompt": "_document",
    "is_overflow": "_overflow",
    "overflow_limit": "_overflow",
    "parse_token_count": "_window",
    "record_overflow": "_window",
    "resolve_window": "_window",
    "safe_step_name": "_save",
    "save": "_save",
}

_load, _names = lazy_exports(__name__, _HOMES)


def __getattr__(name: str) -> Any:
    return _load(name)


def __dir__() -> list[str]:
    return _names()


if TYPE_CHECKING:
    from ._document import HANDOFF_PROMPT, SECTIONS, TITLES, Handoff, degraded, handoff_prompt
    from ._loop import Decision, HandoffLoop, QuietRound
    from ._overflow import OVERFLOW_WHY, is_overflow, overflow_limit
    from ._policy import HandoffPolicy
    from ._save import safe_step_name, save
    from ._window import (
        DEFAULT_WINDOW,
        Window,
        calibration_path,
        guess_window,
        parse_token_count,
        record_overflow,
        resolve_window,
    )
