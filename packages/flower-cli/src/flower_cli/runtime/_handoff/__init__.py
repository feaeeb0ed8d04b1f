"""Handoff instead of compaction: when a session's context nears the window, it writes a five-part handoff and
a fresh session takes the step over from it.

One job per module: where the window comes from and what real overflows taught (`_window`), when to hand off
(`_policy`), recognising an overflow (`_overflow`), the document (`_document`), what a degraded one can still
carry (`_salvage`), keeping it on disk (`_save`), and one step's handoffs as the Runtime runs them (`_loop`). Names are imported on first use (see
`flower_cli._shared.lazy`): the window and the policy do not load the loop's anyio.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._shared.lazy import lazy_surface

if TYPE_CHECKING:
    from ._document import HANDOFF_PROMPT as HANDOFF_PROMPT
    from ._document import SECTIONS as SECTIONS
    from ._document import TITLES as TITLES
    from ._document import Handoff as Handoff
    from ._document import degraded as degraded
    from ._document import handoff_prompt as handoff_prompt
    from ._loop import Decision as Decision
    from ._loop import HandoffLoop as HandoffLoop
    from ._loop import QuietRound as QuietRound
    from ._overflow import OVERFLOW_WHY as OVERFLOW_WHY
    from ._overflow import is_overflow as is_overflow
    from ._overflow import overflow_limit as overflow_limit
    from ._policy import HandoffPolicy as HandoffPolicy
    from ._save import safe_step_name as safe_step_name
    from ._save import save as save
    from ._window import DEFAULT_WINDOW as DEFAULT_WINDOW
    from ._window import Window as Window
    from ._window import calibration_path as calibration_path
    from ._window import guess_window as guess_window
    from ._window import parse_token_count as parse_token_count
    from ._window import record_overflow as record_overflow
    from ._window import resolve_window as resolve_window

__all__ = lazy_surface(__name__)
