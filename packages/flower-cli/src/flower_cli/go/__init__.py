"""The ``flower go`` path: clarify -> goal -> judged work rounds (the flow), the driver that reads what the person
types while it works, the brief/goal/verdict parsers, the human channel, continuity across wakes, and asides.

Names are imported on first use (see `flower_cli._shared.lazy`), so importing one of them does not load the rest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._shared.lazy import lazy_exports

__all__ = [
    "Achieved",
    "AsideAnswer",
    "Brief",
    "CLARIFY",
    "GoDriver",
    "GoFlow",
    "GoSettings",
    "GoState",
    "Goal",
    "HumanChannel",
    "NotesPaths",
    "Verdict",
    "WAKE_LABEL",
    "WORK",
    "WakeState",
    "achieved",
    "answer_aside",
    "archive_for_new",
    "aside_context",
    "build_go_flow",
    "go_workbench",
    "progress_line",
    "route_eof",
    "route_json",
    "route_line",
    "wake_banner",
    "wake_state",
]

_HOMES = {
    "Achieved": "_achieved",
    "AsideAnswer": "_aside",
    "Brief": "_brief",
    "CLARIFY": "_flow",
    "GoDriver": "_driver",
    "GoFlow": "_flow",
    "GoSettings": "_settings",
    "GoState": "_flow",
    "Goal": "_goal",
    "HumanChannel": "_human",
    "NotesPaths": "_continuity",
    "Verdict": "_verdict",
    "WAKE_LABEL": "_brief",
    "WORK": "_flow",
    "WakeState": "_continuity",
    "achieved": "_achieved",
    "answer_aside": "_aside",
    "archive_for_new": "_continuity",
    "aside_context": "_aside",
    "build_go_flow": "_flow",
    "go_workbench": "_flow",
    "progress_line": "_aside",
    "route_eof": "_routing",
    "route_json": "_routing",
    "route_line": "_routing",
    "wake_banner": "_continuity",
    "wake_state": "_continuity",
}

_load, _names = lazy_exports(__name__, _HOMES)


def __getattr__(name: str) -> Any:
    return _load(name)


def __dir__() -> list[str]:
    return _names()


if TYPE_CHECKING:
    from ._achieved import Achieved, achieved
    from ._aside import AsideAnswer, answer_aside, aside_context, progress_line
    from ._brief import WAKE_LABEL, Brief
    from ._continuity import NotesPaths, WakeState, archive_for_new, wake_banner, wake_state
    from ._driver import GoDriver
    from ._flow import CLARIFY, WORK, GoFlow, GoState, build_go_flow, go_workbench
    from ._goal import Goal
    from ._human import HumanChannel
    from ._routing import route_eof, route_json, route_line
    from ._settings import GoSettings
    from ._verdict import Verdict
