"""The credential and model keys flower knows by name."""

from __future__ import annotations

__all__ = ["DEFAULT_BASE_URL", "KNOWN_KEYS", "REQUIRED_ANY", "is_secret"]

# The only keys borrowed from Claude Code's settings, and the ones describe() shows, in this order.
KNOWN_KEYS: tuple[str, ...] = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_MODEL",
    "ANTHROPIC_DEFAULT_OPUS_MODEL",
    "ANTHROPIC_DEFAULT_SONNET_MODEL",
    "ANTHROPIC_DEFAULT_HAIKU_MODEL",
    "CLAUDE_CODE_SUBAGENT_MODEL",
    "CLAUDE_CODE_EFFORT_LEVEL",
)

# At least one of these must be non-empty.
REQUIRED_ANY: tuple[str, ...] = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")

DEFAULT_BASE_URL = "https://api.anthropic.com"


def is_secret(key: str) -> bool:
    return "TOKEN" in key or "KEY" in key
