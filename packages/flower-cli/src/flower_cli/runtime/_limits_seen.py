"""The last usage limit seen for each endpoint, kept beside the user's ``.env`` (``~/.config/flower/.limits``), so
``flower doctor`` can say what the last run met and until when, whichever run dir it was in."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import flower_env
from flower_resilience import UsageLimit

from .._shared.files import atomic_write_text, file_lock, read_json

__all__ = ["last_limit", "limits_path", "remember_limit"]


def limits_path() -> Path:
    """``${XDG_CONFIG_HOME:-~/.config}/flower/.limits``."""
    return flower_env.user_env_path().parent / ".limits"


def _endpoint_key(base_url: str | None) -> str:
    return (base_url or os.environ.get("ANTHROPIC_BASE_URL") or flower_env.DEFAULT_BASE_URL).rstrip("/")


def remember_limit(limit: UsageLimit, base_url: str | None = None) -> None:
    """Keep ``limit`` as the endpoint's last; a file that cannot be written is skipped (a run never fails for it)."""
    path = limits_path()
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with file_lock(path):
            seen, _ = read_json(path)
            table: dict[str, Any] = seen if isinstance(seen, dict) else {}
            table[_endpoint_key(base_url)] = {**limit.to_json(), "seen_at": round(time.time(), 3)}
            atomic_write_text(path, json.dumps(table, indent=2, sort_keys=True) + "\n", mode=0o600)
    except (OSError, ValueError):
        return


def last_limit(base_url: str | None = None) -> dict[str, Any] | None:
    """The endpoint's last limit as kept (``UsageLimit.to_json()`` plus ``seen_at``), or None."""
    seen, _ = read_json(limits_path())
    entry = seen.get(_endpoint_key(base_url)) if isinstance(seen, dict) else None
    return entry if isinstance(entry, dict) else None
