"""Which endpoint and credential the live probe accepted today, so a run pays for it once a day, not each time.

Kept in ``${XDG_CONFIG_HOME:-~/.config}/flower/.probed`` (mode 0600, written atomically) as a SHA-256 of the
base URL and the credential — never the credential itself — under today's local date. A new day, another
endpoint or another key means "not probed": the next run probes again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import time
from pathlib import Path

from ._keys import DEFAULT_BASE_URL
from ._paths import user_env_path

__all__ = ["probe_fingerprint", "probed_path", "probed_today", "remember_probe"]


def probed_path() -> Path:
    """``${XDG_CONFIG_HOME:-~/.config}/flower/.probed``, beside the user .env."""
    return user_env_path().parent / ".probed"


def probe_fingerprint() -> str | None:
    """A hash of the endpoint and the credential the probe would use (None: there is no credential)."""
    if os.environ.get("ANTHROPIC_API_KEY"):
        kind, secret = "x-api-key", os.environ["ANTHROPIC_API_KEY"]
    elif os.environ.get("ANTHROPIC_AUTH_TOKEN"):
        kind, secret = "bearer", os.environ["ANTHROPIC_AUTH_TOKEN"]
    else:
        return None
    endpoint = (os.environ.get("ANTHROPIC_BASE_URL") or DEFAULT_BASE_URL).strip().rstrip("/")
    return hashlib.sha256(f"flower-probe\0{endpoint}\0{kind}\0{secret}".encode()).hexdigest()


def _today() -> str:
    return time.strftime("%Y-%m-%d")


def _read(path: Path) -> dict[str, object]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):  # missing, unreadable or garbled: as if nothing was probed
        return {}
    return data if isinstance(data, dict) else {}


def probed_today(day: str | None = None) -> bool:
    """Did the probe accept this endpoint and credential today (``day``, ``YYYY-MM-DD``; default: today)?"""
    fingerprint = probe_fingerprint()
    if fingerprint is None:
        return False
    data = _read(probed_path())
    accepted = data.get("accepted")
    return data.get("day") == (day or _today()) and isinstance(accepted, list) and fingerprint in accepted


def remember_probe(day: str | None = None) -> Path | None:
    """Note that the probe accepted the current endpoint and credential today; the file's path, or None.

    Only today's entries are kept. A file that cannot be written is not an error: the next run probes again.
    """
    fingerprint = probe_fingerprint()
    if fingerprint is None:
        return None
    day = day or _today()
    path = probed_path()
    data = _read(path)
    kept = data.get("accepted") if data.get("day") == day else []
    accepted = [f for f in kept if isinstance(f, str) and f != fingerprint] if isinstance(kept, list) else []
    accepted.append(fingerprint)
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(prefix=".probed.", suffix=".tmp", dir=path.parent)  # created 0600
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump({"day": day, "accepted": accepted}, handle)
            os.chmod(tmp, 0o600)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except OSError:
        return None
    return path
