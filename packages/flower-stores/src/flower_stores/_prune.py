"""Pruning: drop synthetic API errors and old denials, neutralise interrupted calls, then relink and heal.

`prune` does in three passes what `relink` and `heal_orphans` do in four more: on a freshly loaded 20 MB
transcript every dictionary lookup is a cache miss, and the number of passes is what a layered load costs.
Its output is, by test, exactly ``heal_orphans(relink(...))`` of the same removals.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ._chain import heal_entry, heal_sites, relinked_parent, repointed, unanswered
from ._entries import REMOVE, Entry, all_but_newest, blocks, replace_blocks
from ._policies import PrunePolicy
from ._report import LoadReport
from ._rewritten import Rewritten

__all__ = ["is_api_error", "is_interrupted", "prune"]


def is_api_error(entry: Entry) -> bool:
    """A synthetic entry the harness wrote for a failed request (``isApiErrorMessage`` / ``<synthetic>``)."""
    if entry.get("isApiErrorMessage"):
        return True
    message = entry.get("message")
    return type(message) is dict and message.get("model") == "<synthetic>"


def is_interrupted(entry: Entry, block: Mapping[str, Any]) -> bool:
    """A result of a call that was stopped while it ran (not refused before it ran).

    Claude Code 2.x marks it ``toolDenialKind: "user-rejected"`` with no ``permissionDecision`` (a refusal
    always records the decision); older versions wrote ``[Request interrupted …`` into an error result.
    """
    if entry.get("toolDenialKind") == "user-rejected" and "permissionDecision" not in entry:
        return True
    content = block.get("content")
    return bool(block.get("is_error")) and type(content) is str and "[Request interrupted" in content


def _answers(block: Any, dead: set[str]) -> bool:
    """A block of a dropped denial: its tool_use, or the tool_result that answers it."""
    if type(block) is not dict:
        return False
    kind = block.get("type")
    return (kind == "tool_use" and block.get("id") in dead) or (kind == "tool_result" and block.get("tool_use_id") in dead)


def prune(entries: Sequence[Entry], policy: PrunePolicy | None = None) -> Rewritten:
    """Clean the transcript the way `PrunePolicy` says, keeping it a valid conversation.

    Removed entries are re-linked (as `relink` does) and unanswered calls healed (as `heal_orphans` does). A
    ``tool_result`` is never removed while its ``tool_use`` stays: a dropped denial takes both blocks and
    nothing else of either message. Compact summaries and meta entries are never dropped or rewritten. The
    input is not modified.
    """
    policy = policy or PrunePolicy()

    # --- pass 1: what is there -------------------------------------------------------------------------
    denied: list[str] = []
    in_protected: set[Any] = set()  # call ids with a block in a compact summary or meta entry
    answered: set[Any] = set()
    calls_at: dict[int, list[str]] = {}  # assistant entry index -> its tool_use ids
    kinds = policy.denial_kinds
    for i, entry in enumerate(entries):
        message = entry.get("message")
        content = message.get("content") if type(message) is dict else None
        protected = entry.get("isCompactSummary") or entry.get("isMeta")
        if type(content) is list:
            for block in content:
                if type(block) is not dict:
                    continue
                kind = block.get("type")
                if kind == "tool_result":
                    tool_use_id = block.get("tool_use_id")
                    answered.add(tool_use_id)
                    if protected:
                        in_protected.add(tool_use_id)
                elif kind == "tool_use":
                    tool_id = block.get("id")
                    if protected:
                        in_protected.add(tool_id)
                    if isinstance(tool_id, str) and entry.get("type") == "assistant":
                        calls_at.setdefault(i, []).append(tool_id)
        if not protected and entry.get("toolDenialKind") in kinds and type(content) is list:
            # A denial answers one call: its first tool_result (unless the call was interrupted instead).
            first = next((b for b in content if type(b) is dict and b.get("type") == "tool_result"), None)
            if first is not None and not is_interrupted(entry, first):
                tool_use_id = first.get("tool_use_id")
                if isinstance(tool_use_id, str) and tool_use_id not in denied:
                    denied.append(tool_use_id)
    candidates = all_but_newest(denied, policy.keep_denials)
    dead = {x for x in candidates if x not in in_protected}

    # --- pass 2: rewrite and mark (out[i] is entries[i] or its replacement; None: gone, nothing links to it)
    out: list[Any] = []
    drop: dict[str, Any] = {}  # uuid of a removed entry -> its parentUuid (relink walks up through it)
    uuidless_gone = api_errors = neutralized = 0
    for entry in entries:
        if entry.get("isCompactSummary") or entry.get("isMeta"):
            out.append(entry)
            continue
        content = blocks(entry)
        remove = False
        # A synthetic entry never carries a call; if one ever did, removing it would orphan its result.
        if policy.drop_api_errors and is_api_error(entry) and not any(type(b) is dict and b.get("type") == "tool_use" for b in content):
            api_errors += 1
            remove = True
        current: Any = entry
        if not remove and dead and content and any(_answers(b, dead) for b in content):
            kept = [b for b in content if not _answers(b, dead)]
            if kept:
                lost_result = any(_answers(b, dead) and b.get("type") == "tool_result" for b in content)
                current = replace_blocks(entry, kept, **({"toolUseResult": REMOVE} if lost_result else {}))
                content = kept
            else:
                remove = True
        if remove:
            uid = entry.get("uuid")
            if isinstance(uid, str):
                drop[uid] = entry.get("parentUuid")
                out.append(entry)
            else:
                uuidless_gone += 1
                out.append(None)
            continue
        if policy.neutralize_interrupts and content and entry.get("type") == "user":
            hits = [j for j, b in enumerate(content) if type(b) is dict and b.get("type") == "tool_result" and is_interrupted(entry, b)]
            if hits:
                new = list(content)
                for j in hits:
                    new[j] = {**new[j], "content": policy.interrupt_text, "is_error": False}
                current = replace_blocks(current, new)
                neutralized += len(hits)
        out.append(current)

    # --- heal: which surviving calls are unanswered, and where their answer goes -------------------------
    survivor = relinked_parent(drop)
    heals: dict[int, list[str]] = {}
    if policy.heal_orphans:
        gone = {i for i in calls_at if out[i] is None or out[i].get("uuid") in drop}
        orphans_at = unanswered(calls_at, answered | dead, skip=gone)
        if orphans_at:
            children: dict[str, list[int]] = {}
            for i, entry in enumerate(out):
                if entry is None or entry.get("uuid") in drop:
                    continue
                parent = entry.get("parentUuid")
                if parent is not None and parent in drop:
                    parent = survivor(parent)
                if isinstance(parent, str):
                    children.setdefault(parent, []).append(i)
            heals = heal_sites(out, orphans_at, lambda uid: children.get(uid, ()))
    inserted = {tail: heal_entry(out[tail], ids, policy.orphan_text) for tail, ids in heals.items()}
    heal_of = {out[tail].get("uuid"): heal["uuid"] for tail, heal in inserted.items() if isinstance(out[tail].get("uuid"), str)}

    # --- pass 3: drop, re-point every link (to the nearest survivor, then past a heal entry), insert heals
    final: list[dict[str, Any]] = []
    for i, entry in enumerate(out):
        if entry is None or entry.get("uuid") in drop:
            continue
        final.append(repointed(entry, drop, survivor, heal_of))
        if i in inserted:
            final.append(inserted[i])

    report = LoadReport(
        denials_dropped=len(dead),
        api_errors_dropped=api_errors,
        interrupts_neutralized=neutralized,
        orphans_healed=sum(len(ids) for ids in heals.values()),
        pruned=len(drop) + uuidless_gone,
    )
    return Rewritten(final, report)
