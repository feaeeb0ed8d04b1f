"""Pruning: drop synthetic API errors and old denials, neutralise interrupted calls, then relink and heal."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ._chain import heal_orphans_counted, relink
from ._entries import REMOVE, Entry, blocks, is_protected, replace_blocks, tool_result_blocks, tool_use_blocks
from ._policies import PrunePolicy
from ._report import LoadReport
from ._rewritten import Rewritten

__all__ = ["is_api_error", "is_interrupted", "prune"]


def is_api_error(entry: Entry) -> bool:
    """A synthetic entry the harness wrote for a failed request (``isApiErrorMessage`` / ``<synthetic>``)."""
    if entry.get("isApiErrorMessage"):
        return True
    message = entry.get("message")
    return isinstance(message, Mapping) and message.get("model") == "<synthetic>"


def is_interrupted(entry: Entry, block: Mapping[str, Any]) -> bool:
    """A result of a call that was stopped while it ran (not refused before it ran).

    Claude Code 2.x marks it ``toolDenialKind: "user-rejected"`` with no ``permissionDecision`` (a refusal
    always records the decision); older versions wrote ``[Request interrupted …`` into an error result.
    """
    if entry.get("toolDenialKind") == "user-rejected" and "permissionDecision" not in entry:
        return True
    content = block.get("content")
    return bool(block.get("is_error")) and isinstance(content, str) and "[Request interrupted" in content


def _denied_id(entry: Entry, kinds: frozenset[str]) -> str | None:
    """The tool_use id a denial entry answers (its first tool_result), or None if it is not a denial."""
    if entry.get("toolDenialKind") not in kinds:
        return None
    for _, block in tool_result_blocks(entry):
        if is_interrupted(entry, block):
            return None
        tool_use_id = block.get("tool_use_id")
        return tool_use_id if isinstance(tool_use_id, str) else None
    return None


def _answers_dead(block: Any, dead: set[str]) -> bool:
    """A block of a dropped denial: its tool_use, or the tool_result that answers it."""
    if not isinstance(block, Mapping):
        return False
    kind = block.get("type")
    return (kind == "tool_use" and block.get("id") in dead) or (kind == "tool_result" and block.get("tool_use_id") in dead)


def prune(entries: Sequence[Entry], policy: PrunePolicy | None = None) -> Rewritten:
    """Clean the transcript the way `PrunePolicy` says, keeping it a valid conversation.

    Removed entries are re-linked (`relink`) and unanswered calls healed (`heal_orphans`). A ``tool_result``
    is never removed while its ``tool_use`` stays: a dropped denial takes both blocks and nothing else of
    either message. Compact summaries and meta entries are never dropped or rewritten. The input is not
    modified.
    """
    policy = policy or PrunePolicy()
    denied: list[str] = []
    use_in_protected: set[Any] = set()
    result_in_protected: set[Any] = set()
    for entry in entries:
        if is_protected(entry):
            use_in_protected.update(b.get("id") for b in tool_use_blocks(entry))
            result_in_protected.update(b.get("tool_use_id") for _, b in tool_result_blocks(entry))
            continue
        tool_use_id = _denied_id(entry, policy.denial_kinds)
        if tool_use_id is not None and tool_use_id not in denied:
            denied.append(tool_use_id)
    keep = max(policy.keep_denials, 0)
    candidates = denied[: len(denied) - keep] if keep else denied
    dead = {x for x in candidates if x not in use_in_protected and x not in result_in_protected}

    out: list[Any] = []
    drop: set[str] = set()
    dropped_no_uuid = api_errors = neutralized = 0
    for entry in entries:
        if is_protected(entry):
            out.append(entry)
            continue
        # A synthetic entry never carries a call; if one ever did, removing it would orphan its result.
        if policy.drop_api_errors and is_api_error(entry) and next(tool_use_blocks(entry), None) is None:
            api_errors += 1
            uid = entry.get("uuid")
            if isinstance(uid, str):
                drop.add(uid)
                out.append(entry)  # relink walks through it
            else:
                dropped_no_uuid += 1  # nothing can point at it: just leave it out
            continue
        current: Any = entry
        content = blocks(entry)
        if dead and content:
            kept = [b for b in content if not _answers_dead(b, dead)]
            if len(kept) != len(content):
                if not kept:
                    uid = entry.get("uuid")
                    if isinstance(uid, str):
                        drop.add(uid)
                        out.append(entry)
                    else:
                        dropped_no_uuid += 1
                    continue
                lost_result = any(_answers_dead(b, dead) and b.get("type") == "tool_result" for b in content)
                current = replace_blocks(entry, kept, **({"toolUseResult": REMOVE} if lost_result else {}))
                content = kept
        if policy.neutralize_interrupts and content:
            hits = [j for j, b in tool_result_blocks(current) if is_interrupted(current, b)]
            if hits:
                new = list(content)
                for j in hits:
                    new[j] = {**new[j], "content": policy.interrupt_text, "is_error": False}
                current = replace_blocks(current, new)
                neutralized += len(hits)
        out.append(current)

    relinked = relink(out, drop)
    healed, orphans = heal_orphans_counted(relinked, policy.orphan_text) if policy.heal_orphans else (relinked, 0)
    report = LoadReport(
        denials_dropped=len(dead),
        api_errors_dropped=api_errors,
        interrupts_neutralized=neutralized,
        orphans_healed=orphans,
        pruned=len(drop) + dropped_no_uuid,
    )
    return Rewritten(healed, report)
