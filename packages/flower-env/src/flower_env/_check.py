"""Is there a usable credential, and what is configured (masked, with where each value came from)?"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ._keys import DEFAULT_BASE_URL, KNOWN_KEYS, REQUIRED_ANY, is_secret
from ._load import source_of
from ._paths import user_env_path

__all__ = ["Setting", "check_credentials", "describe", "mask", "settings"]


def check_credentials() -> str | None:
    """``None`` when ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN is non-empty, else what to do about it."""
    if any(os.environ.get(key) for key in REQUIRED_ANY):
        return None
    lines = [
        "Missing credential: flower needs ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN.",
        f"Easiest: run `flower setup` once; it stores the token in {user_env_path()} (set once, works everywhere).",
        "Or: put it in ./.env, or export it in your shell.",
        "(Claude Code's own settings were tried too — the env block of ~/.claude/settings.json — and held none.)",
    ]
    empty = [(key, source_of(key)) for key in REQUIRED_ANY if key in os.environ]
    for key, where in empty:
        lines.append(
            f"Note: {key} is set but empty (from {where}); an empty value hides the files below it — delete that line."
        )
    return "\n".join(lines)


def mask(value: str) -> str:
    return f"{value[:4]}…({len(value)} chars)"


@dataclass(frozen=True)
class Setting:
    key: str
    display: str  # secrets masked to their first 4 characters and length
    source: str  # "process environment", a file path, "Claude Code settings (…)", or "default"


def settings() -> list[Setting]:
    """The known keys that are set (in their fixed order), masked, with the source of each value."""
    out: list[Setting] = []
    for key in KNOWN_KEYS:
        value = os.environ.get(key)
        if value:
            out.append(Setting(key, mask(value) if is_secret(key) else value, source_of(key) or "process environment"))
        elif key == "ANTHROPIC_BASE_URL":
            out.append(Setting(key, DEFAULT_BASE_URL, "default"))
    return out


def describe() -> dict[str, str]:
    """``{key: "<masked value>  (<source>)"}`` — what `flower -v` and `flower doctor` print."""
    return {s.key: f"{s.display}  ({s.source})" for s in settings()}
