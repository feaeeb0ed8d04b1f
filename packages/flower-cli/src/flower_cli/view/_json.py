"""``--json``: one JSON object per event per line on stdout, for programs; and the one test both renderers
count refused tool calls by, so the terminal and ``--json`` agree on the number."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from ..runtime import Event

__all__ = ["JsonRenderer", "is_refusal"]


def is_refusal(event: Event) -> bool:
    """Whether ``event`` is a tool call the harness refused (the event stream marks it ``denied``): the one
    test both renderers count by, so the terminal and ``--json`` agree on the number."""
    return event.kind == "tool_result" and isinstance(event.payload.get("denied"), dict)


class JsonRenderer:
    """``--json``: one JSON object per event per line, for programs. It counts the refused tool calls as the
    terminal `Renderer` does (`is_refusal`), for the closing line and the ``done`` event."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stdout
        self.refused = 0

    def __call__(self, event: Event) -> None:
        if is_refusal(event):
            self.refused += 1
        self.emit(event.to_json())

    def emit(self, obj: dict[str, Any]) -> None:
        self.stream.write(json.dumps(obj, ensure_ascii=False, default=str) + "\n")
        self.stream.flush()
