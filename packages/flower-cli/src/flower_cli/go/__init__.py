"""The ``flower go`` path: clarify -> goal -> judged work rounds (the flow), the driver that reads what the person
types while it works, the brief/goal/verdict parsers, the human channel, continuity across wakes, and asides.

Names are imported on first use (see `flower_cli._shared.lazy`), so importing one of them does not load the rest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._shared.lazy import lazy_surface

if TYPE_CHECKING:
    from ._achieved import Achieved as Achieved
    from ._achieved import achieved as achieved
    from ._aside import AsideAnswer as AsideAnswer
    from ._aside import answer_aside as answer_aside
    from ._aside import aside_context as aside_context
    from ._aside import progress_line as progress_line
    from ._brief import WAKE_LABEL as WAKE_LABEL
    from ._brief import Brief as Brief
    from ._continuity import NotesPaths as NotesPaths
    from ._continuity import WakeState as WakeState
    from ._continuity import archive_for_new as archive_for_new
    from ._continuity import wake_banner as wake_banner
    from ._continuity import wake_state as wake_state
    from ._driver import GoDriver as GoDriver
    from ._flow import CLARIFY as CLARIFY
    from ._flow import WORK as WORK
    from ._flow import GoFlow as GoFlow
    from ._flow import GoState as GoState
    from ._flow import build_go_flow as build_go_flow
    from ._flow import go_workbench as go_workbench
    from ._goal import Goal as Goal
    from ._human import HumanChannel as HumanChannel
    from ._routing import route_eof as route_eof
    from ._routing import route_json as route_json
    from ._routing import route_line as route_line
    from ._settings import GoSettings as GoSettings
    from ._verdict import Verdict as Verdict

__all__ = lazy_surface(__name__)
