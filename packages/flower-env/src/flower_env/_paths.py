"""Where the .env sources live."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["checkout_root", "claude_settings_paths", "home", "user_env_path"]


def home() -> Path | None:
    try:
        return Path.home()
    except (RuntimeError, KeyError):  # no HOME and no passwd entry: treat the home sources as absent
        return None


def user_env_path() -> Path:
    """``${XDG_CONFIG_HOME:-~/.config}/flower/.env``: the file ``flower setup`` writes."""
    xdg = os.environ.get("XDG_CONFIG_HOME")
    base = Path(xdg) if xdg else (home() or Path(".")) / ".config"
    return base / "flower" / ".env"


def checkout_root() -> Path | None:
    """The repository root when running from a git checkout of flower; ``None`` for an installed wheel.

    The layout is ``<root>/packages/flower-env/src/flower_env/``; both the ``.git`` entry and that layout must
    be there, so a site-packages install inside some unrelated git repository is not mistaken for one.
    """
    here = Path(__file__).resolve()
    if len(here.parents) < 5:
        return None
    root = here.parents[4]
    if (root / ".git").exists() and (root / "packages" / "flower-env" / "pyproject.toml").is_file():
        return root
    return None


def claude_settings_paths() -> list[Path]:
    """``~/.claude/settings.local.json`` then ``~/.claude/settings.json``, in precedence order.

    The local file wins, as it does in Claude Code itself (docs/compatibility.md).
    """
    h = home()
    if h is None:
        return []
    return [h / ".claude" / "settings.local.json", h / ".claude" / "settings.json"]
