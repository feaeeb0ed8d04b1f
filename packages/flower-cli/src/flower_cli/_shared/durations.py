"""Durations people type (``90s``, ``6h``, ``30d``): one reader for every option that takes one; each option says
which spellings it accepts."""

from __future__ import annotations

import re
from collections.abc import Mapping

__all__ = ["seconds_in"]

_UNIT_S = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 7 * 86400.0}
_FORM = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*", re.IGNORECASE)


def seconds_in(text: str, spellings: Mapping[str, str]) -> float | None:
    """The seconds ``text`` names — a number and a unit ``spellings`` knows (as typed, lower case → s, m, h, d or w;
    ``""`` for a bare number) — or None for anything else."""
    match = _FORM.fullmatch(text)
    if match is None:
        return None
    unit = spellings.get(match.group(2).lower())
    return None if unit is None else float(match.group(1)) * _UNIT_S[unit]
