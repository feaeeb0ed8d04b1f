"""A session id as a person types it: the full id, or any unique prefix of one (``flower analyze`` prints 8)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import anyio

from ..._shared.exits import Exit, ExitCode

__all__ = ["match_session", "resolve_session"]

_SHOWN = 5  # candidates named in an "ambiguous" message


def match_session(given: str, known: Iterable[str], *, where: str) -> str:
    """The one id of ``known`` that is ``given`` or starts with it; a usage `Exit` for none or several.

    ``where`` names the workspace and store for the messages.
    """
    wanted = given.strip()
    ids = sorted(set(known))
    if not wanted:
        raise Exit(ExitCode.USAGE, "the session id is empty; `flower sessions` lists the ones there are.")
    if wanted in ids:
        return wanted
    matches = [sid for sid in ids if sid.lower().startswith(wanted.lower())]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise Exit(ExitCode.USAGE, f"no session {wanted} {where}; `flower sessions` lists the ones there are.")
    named = ", ".join(matches[:_SHOWN]) + (f" and {len(matches) - _SHOWN} more" if len(matches) > _SHOWN else "")
    raise Exit(
        ExitCode.USAGE,
        f"the session prefix {wanted} is ambiguous: {len(matches)} sessions start with it ({named}); "
        "give more of the id.",
    )


def resolve_session(store: Any, project_key: str, given: str, *, where: str) -> str:
    """``given`` resolved against the sessions ``store`` holds for ``project_key`` (its ``list_sessions``).

    A store that cannot list its sessions is asked for the exact id only.
    """
    lister = getattr(store, "list_sessions", None)
    if not callable(lister):
        check = getattr(store, "has_session", None)
        known = [given.strip()] if callable(check) and check(project_key, given.strip()) else []
        return match_session(given, known, where=where)
    listed = anyio.run(lister, project_key)
    return match_session(given, (str(item["session_id"]) for item in listed), where=where)
