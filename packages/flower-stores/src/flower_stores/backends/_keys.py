"""The ``store_key`` layout both backends share, and the index range of every key under a prefix."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from claude_agent_sdk import SessionKey, SessionListSubkeysKey

__all__ = ["prefix_range", "store_key"]


def store_key(key: SessionKey | SessionListSubkeysKey) -> str:
    """``project_key/session_id[/subpath]``: the layout of ``entries.store_key`` and ``meta.store_key``, the same as
    in the original flower's ``sessions.db`` (docs/compatibility.md)."""
    subpath = cast("dict[str, Any]", key).get("subpath")
    base = f"{key['project_key']}/{key['session_id']}"
    return f"{base}/{subpath}" if subpath else base


def prefix_range(prefix: str) -> tuple[str, str]:
    """Bounds of every string starting with ``prefix`` (which ends in "/"): an index range, no LIKE escaping.

    ``"/"`` is U+002F and ``"0"`` U+0030, so ``[p + "/", p + "0")`` holds exactly the keys under ``p/`` — in
    code-point order, which is why the PostgreSQL schema declares its key columns ``COLLATE "C"``.
    """
    assert prefix.endswith("/")
    return prefix, prefix[:-1] + "0"
