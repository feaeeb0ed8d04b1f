"""Where the context window comes from, and remembering the windows real overflows revealed.

Precedence: an explicit value (``--window``) > ``FLOWER_WINDOW`` > the calibration file (the smallest context
seen in a real overflow for this endpoint and model) > a guess from the model name. The guess is 200,000 unless
the name asks for the 1M context (a standalone ``1m`` / ``[1m]``): 200k is the standard window of every current
Claude model, and the 1M window is an opt-in that Claude Code selects with that suffix. A guess that is too
large is the expensive mistake (the request overflows and the handoff degrades); the original's default of 1M
made it on every gateway.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..._shared.files import atomic_write_text, file_lock, move_aside, read_json

__all__ = [
    "DEFAULT_WINDOW",
    "Window",
    "calibration_path",
    "guess_window",
    "parse_token_count",
    "record_overflow",
    "resolve_window",
]

DEFAULT_WINDOW = 200_000
_ONE_MILLION = 1_000_000


@dataclass(frozen=True)
class Window:
    """A context window size and where it came from (for ``-v`` and ``flower doctor``)."""

    tokens: int
    source: Literal["option", "FLOWER_WINDOW", "calibrated", "model name", "default"]
    note: str = ""  # e.g. why FLOWER_WINDOW was ignored


def parse_token_count(text: str) -> int:
    """``"200000"``, ``"200_000"``, ``"200k"``, ``"1m"``, ``"1.5M"`` → tokens; ValueError with a clear message."""
    raw = text.strip().lower().replace("_", "").replace(",", "")
    match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([km]?)", raw)
    if not match:
        raise ValueError(f"{text!r} is not a token count; write e.g. 200000, 200k or 1m")
    value = float(match.group(1)) * {"": 1, "k": 1_000, "m": 1_000_000}[match.group(2)]
    if value < 1 or value != int(value):
        raise ValueError(f"{text!r} is not a positive whole number of tokens")
    return int(value)


def guess_window(model: str | None) -> int:
    """The window a model name implies: 1M when it asks for it (``…[1m]``, ``…-1m``), else 200k."""
    if model and re.search(r"(?<![a-z0-9])1m(?![a-z0-9])", model.lower()):
        return _ONE_MILLION
    return DEFAULT_WINDOW


def _env(env: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if env is None else env


def _model(model: str | None, env: Mapping[str, str]) -> str:
    return model or env.get("ANTHROPIC_MODEL") or env.get("ANTHROPIC_DEFAULT_OPUS_MODEL") or ""


def calibration_path(env: Mapping[str, str] | None = None) -> Path:
    """``${XDG_CONFIG_HOME:-~/.config}/flower/.windows``."""
    e = _env(env)
    base = e.get("XDG_CONFIG_HOME") or str(Path(e.get("HOME") or Path.home()) / ".config")
    return Path(base) / "flower" / ".windows"


def _calibration_key(model: str, base_url: str | None, env: Mapping[str, str]) -> str:
    url = (base_url or env.get("ANTHROPIC_BASE_URL") or "").strip().rstrip("/") or "default"
    return f"{url}|{model or 'default'}"


def _read_calibration(path: Path) -> dict[str, int]:
    data, _problem = read_json(path)
    if not isinstance(data, dict):
        return {}
    return {str(k): v for k, v in data.items() if isinstance(v, int) and not isinstance(v, bool) and v > 0}


def resolve_window(
    window: int | None = None,
    *,
    model: str | None = None,
    base_url: str | None = None,
    env: Mapping[str, str] | None = None,
) -> Window:
    """The context window to plan handoffs against, and its source (see the module docstring)."""
    if window is not None:
        if window <= 0:
            raise ValueError(f"a context window must be a positive token count, not {window}")
        return Window(window, "option")
    e = _env(env)
    note = ""
    raw = e.get("FLOWER_WINDOW", "").strip()
    if raw:
        try:
            return Window(parse_token_count(raw), "FLOWER_WINDOW")
        except ValueError as exc:
            note = f"FLOWER_WINDOW ignored: {exc}"
    name = _model(model, e)
    seen = _read_calibration(calibration_path(e)).get(_calibration_key(name, base_url, e))
    if seen:
        return Window(seen, "calibrated", note)
    if name:
        return Window(guess_window(name), "model name", note)
    return Window(DEFAULT_WINDOW, "default", note)


def record_overflow(
    context: int,
    *,
    model: str | None = None,
    base_url: str | None = None,
    env: Mapping[str, str] | None = None,
) -> bool:
    """Remember that ``context`` tokens overflowed this endpoint and model, so later runs plan for it.

    Keeps the smallest value seen. Written atomically under a lock (parallel runs share the file); a corrupt
    file is moved aside, not overwritten. False when there was nothing to record or it could not be written.
    """
    if context <= 0:
        return False
    e = _env(env)
    path = calibration_path(e)
    key = _calibration_key(_model(model, e), base_url, e)
    try:
        with file_lock(path):
            data, problem = read_json(path)
            if problem:
                move_aside(path)
                data = None
            known = _read_calibration(path) if data is not None else {}
            if key in known and known[key] <= context:
                return True
            known[key] = context
            atomic_write_text(path, json.dumps(known, indent=2, sort_keys=True) + "\n")
    except OSError:
        return False
    return True
