"""The result type every rewrite step returns."""

from __future__ import annotations

from typing import Any, NamedTuple

from ._load_report import LoadReport

__all__ = ["Rewritten"]


class Rewritten(NamedTuple):
    """A rewritten transcript (a new list; unchanged entries are shared with the input) and what changed."""

    entries: list[dict[str, Any]]
    report: LoadReport
