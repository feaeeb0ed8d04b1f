"""`fold_summary`: the SDK's session summary fold, fed only the entries of a batch that can still change it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from claude_agent_sdk import SessionKey, SessionStoreEntry, SessionSummaryEntry

__all__ = ["fold_summary"]

# The SDK's fold reads, per entry: a timestamp, isSidechain, cwd and a first prompt only until each is known (then
# they are latched), and after that just the last-wins fields below and the newest ``tag`` entry.
_LAST_WINS = ("customTitle", "aiTitle", "lastPrompt", "summary", "gitBranch")
_LATCHED = ("is_sidechain", "created_at", "cwd", "first_prompt_locked")


def fold_summary(
    prev: SessionSummaryEntry | None, key: SessionKey, entries: list[SessionStoreEntry]
) -> SessionSummaryEntry:
    """The SDK's ``fold_session_summary``, fed only the entries that can still change the summary.

    Once a session's latched fields are known, an entry matters to the fold only if it is the batch's last
    holder of a last-wins field or its last ``tag`` entry; the others would be read and overwritten. Folding
    just those (in order) gives the same summary — on a batch of small entries the full fold was a fifth of
    the append's time (tests/stores/test_fold_summary.py checks the equality on generated batches).
    """
    # Imported here, not at the top: the SDK takes most of a second to import, and a reader of the store
    # (``flower analyze``, ``flower sessions``) never folds a summary.
    from claude_agent_sdk import fold_session_summary

    data = prev["data"] if prev is not None else None
    if data is None or not all(field in data for field in _LATCHED) or len(entries) < 2:
        return fold_session_summary(prev, key, entries)
    needed: set[int] = set()
    wanted = set(_LAST_WINS)
    tag_seen = False
    for i in range(len(entries) - 1, -1, -1):
        entry = cast("dict[str, Any]", entries[i])
        if not tag_seen and entry.get("type") == "tag":
            tag_seen = True
            needed.add(i)
        # isdisjoint walks the entry's keys in C: most entries hold none of the wanted fields
        if wanted and not wanted.isdisjoint(entry):
            found = [name for name in wanted if isinstance(entry.get(name), str)]
            if found:
                wanted.difference_update(found)
                needed.add(i)
        elif tag_seen and not wanted:
            break  # every field the fold still reads has its last holder
    return fold_session_summary(prev, key, [entries[i] for i in sorted(needed)])
