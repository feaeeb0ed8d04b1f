"""``flower doctor``'s usage-limit section: the last limit a run met at this endpoint (kept in
``~/.config/flower/.limits``), whether it is still in force, and how long a step waits one out."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from flower_resilience import span_text, until_text

from ...runtime import DEFAULT_LIMIT_WAIT, last_limit

if TYPE_CHECKING:
    from ...view import Renderer

__all__ = ["show_usage_limit"]


def show_usage_limit(view: Renderer, limit_wait: float | None) -> dict[str, Any]:
    """The section's lines on ``view``; its findings for ``--json`` (``last``: the kept limit, or None)."""
    view.line("usage limit", "bold")
    wait = DEFAULT_LIMIT_WAIT if limit_wait is None else limit_wait
    said = "never waited out (0)" if wait <= 0 else f"waited out up to {span_text(wait)}"
    view.line(f"  a usage limit's reset is {said} (--limit-wait / FLOWER_LIMIT_WAIT)")
    last = last_limit()
    report: dict[str, Any] = {"limit_wait_s": wait, "last": last}
    if last is None:
        view.line("  + no usage limit seen at this endpoint", "green")
        return report
    now = time.time()
    seen_at = last.get("seen_at")
    when = f" on {time.strftime('%Y-%m-%d %H:%M', time.localtime(seen_at))}" if isinstance(seen_at, float) else ""
    name, resets_at = str(last.get("name") or "usage limit"), last.get("resets_at")
    if last.get("kind") == "spend_cap":
        view.line(f"  ! spend limit met{when}: it lifts when the organisation's cap is raised", "yellow")
    elif isinstance(resets_at, (int, float)) and resets_at > now:
        view.line(f"  ! {name} met{when}; still in force: it resets at {until_text(resets_at, now)}", "yellow")
    else:
        view.line(f"  + last {name} met{when}; lifted since", "green")
    report["in_force"] = isinstance(resets_at, (int, float)) and resets_at > now
    return report
