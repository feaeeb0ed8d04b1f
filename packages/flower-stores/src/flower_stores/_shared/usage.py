"""`usage_tokens`: the context size one model call reported, as the stores and the computed index read it."""

from __future__ import annotations

from typing import Any

__all__ = ["usage_tokens"]


def usage_tokens(entry: Any) -> int:
    """Input + cache-read + cache-creation tokens of one parsed entry's ``message.usage`` (0 if it has none)."""
    message = entry.get("message") if isinstance(entry, dict) else None
    usage = message.get("usage") if isinstance(message, dict) else None
    if not isinstance(usage, dict):
        return 0
    return sum(
        v
        for v in (
            usage.get("input_tokens"),
            usage.get("cache_read_input_tokens"),
            usage.get("cache_creation_input_tokens"),
        )
        if isinstance(v, int) and not isinstance(v, bool)
    )
