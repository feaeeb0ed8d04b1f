"""Pruning: drop synthetic API errors and old denials, neutralise interrupted calls, then relink and heal.

`prune` does in three passes what `relink` and `heal_orphans` do in four more: on a freshly loaded 20 MB
transcript every dictionary lookup is a cache miss, and the number of passes is what a layered load costs.
Its output is, by test, exactly ``heal_orphans(relink(...))`` of the same removals.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from ..entries import INTERRUPT, REMOVE, Entry, all_but_newest, blocks, refusal, replace_blocks
from ..report import LoadReport, Rewritten
from ._links import heal_entry, heal_sites, relinked_parent, repointed, unanswered
from ._policies import PrunePolicy

__all__ = ["is_api_error", "is_interrupted", "prune"]


def is_api_error(entry: Entry) -> bool:
    """A synthetic entry the harness wrote for a failed request (``isApiErrorMessage`` / ``<synthetic>``)."""
    if entry.get("isApiErrorMessage"):
        return True
    message = entry.get("message")
    return type(message) is dict and message.get("model") == "<synthetic>"


def is_interrupted(entry: Entry, block: Mapping[str, Any]) -> bool:
    """A result of a call that was stopped, or rejected with "STOP … wait for the user" — in any harness version.

    Claude Code after 2.1.39 marks it ``toolDenialKind: "user-rejected"`` with no ``permissionDecision`` (a refusal
    always records the decision); earlier versions wrote the fixed sentence as an error result, or
    ``[Request interrupted …`` (see `refusal`).
    """
    return refusal(entry, block) == INTERRUPT


def _answers(block: Any, dead: set[str]) -> bool:
    """A block of a dropped denial: its tool_use, or the tool_result that answers it."""
    if type(block) is not dict:
        return False
    kind = block.get("type")
    return (kind == "tool_use" and block.get("id") in dead) or (
        kind == "tool_result" and block.get("tool_use_id") in dead
    )


def odd_entries(entries: Sequence[Any]) -> list[str]:
    """One note per entry a load passes through untouched because it is malformed (not an object, or a
    ``parentUuid`` that is neither a string nor null): the layers never raise on them."""
    notes: list[str] = []
    for i, entry in enumerate(entries):
        if type(entry) is not dict:
            notes.append(f"entry {i} is a JSON {type(entry).__name__}, not an object: passed through")
            continue
        parent = entry.get("parentUuid")
        if parent is not None and type(parent) is not str:
            notes.append(f"entry {i} has a parentUuid that is a {type(parent).__name__}: left as it is")
    return notes


def shared_uuid_note(uid: str) -> str:
    return f"uuid {uid} is carried by more than one entry: only the removed copy went, links to it stay"


def prune(entries: Sequence[Entry], policy: PrunePolicy | None = None) -> Rewritten:
    """Clean the transcript the way `PrunePolicy` says, keeping it a valid conversation.

    Removed entries are re-linked (as `relink` does) and unanswered calls healed (as `heal_orphans` does). A
    ``tool_result`` is never removed while its ``tool_use`` stays: a dropped denial takes both blocks and
    nothing else of either message. Compact summaries and meta entries are never dropped and their content is
    never rewritten (only a link to a removed parent is re-pointed). Malformed entries pass through, noted in
    the report. The input is not modified.
    """
    policy = policy or PrunePolicy()
    notes = odd_entries(entries)
    found = _Survey(entries, policy)  # pass 1: what is there
    dead = {x for x in all_but_newest(found.denied, policy.keep_denials) if x not in found.in_protected}
    out, gone, api_errors, neutralized = _rewrite_and_mark(entries, policy, dead)  # pass 2
    drop = _gone_uuids(entries, gone, notes)
    survivor = relinked_parent(drop)
    heals: dict[int, list[str]] = {}
    if policy.heal_orphans:
        orphans_at = unanswered(found.calls_at, found.answered | dead, skip=gone)
        if orphans_at:
            heals = heal_sites(out, orphans_at, _surviving_children(out, gone, drop, survivor))
    final = _assemble(out, gone, drop, survivor, heals, policy.orphan_text)  # pass 3
    report = LoadReport(
        denials_dropped=len(dead),
        api_errors_dropped=api_errors,
        interrupts_neutralized=neutralized,
        orphans_healed=sum(len(ids) for ids in heals.values()),
        pruned=len(gone),
        notes=tuple(notes),
    )
    return Rewritten(final, report)


class _Survey:
    """Pass 1: the denials the policy prunes (in order), the call ids a protected entry holds, every answered
    call id, and each assistant entry's tool_use ids."""

    def __init__(self, entries: Sequence[Entry], policy: PrunePolicy) -> None:
        self.denied: list[str] = []
        self.in_protected: set[Any] = set()  # call ids with a block in a compact summary or meta entry
        self.answered: set[Any] = set()
        self.calls_at: dict[int, list[str]] = {}  # assistant entry index -> its tool_use ids
        for i, entry in enumerate(entries):
            if type(entry) is not dict:
                continue
            message = entry.get("message")
            content = message.get("content") if type(message) is dict else None
            if type(content) is not list:
                continue
            protected = bool(entry.get("isCompactSummary") or entry.get("isMeta"))
            for block in content:
                if type(block) is dict:
                    self._read(i, entry, block, protected, policy.denial_kinds)

    def _read(self, i: int, entry: Entry, block: dict[str, Any], protected: bool, kinds: Collection[str]) -> None:
        kind = block.get("type")
        if kind == "tool_result":
            tool_use_id = block.get("tool_use_id")
            if not isinstance(tool_use_id, str):
                return
            self.answered.add(tool_use_id)
            if protected:
                self.in_protected.add(tool_use_id)
            elif refusal(entry, block) in kinds and tool_use_id not in self.denied:
                self.denied.append(tool_use_id)
        elif kind == "tool_use":
            tool_id = block.get("id")
            if not isinstance(tool_id, str):
                return
            if protected:
                self.in_protected.add(tool_id)
            if entry.get("type") == "assistant":
                self.calls_at.setdefault(i, []).append(tool_id)


def _rewrite_and_mark(
    entries: Sequence[Entry], policy: PrunePolicy, dead: set[str]
) -> tuple[list[Any], set[int], int, int]:
    """Pass 2: ``out[i]`` is ``entries[i]`` or its replacement, ``gone`` the indexes removed; and how many API
    errors were dropped and interrupted results neutralised."""
    out: list[Any] = []
    gone: set[int] = set()
    api_errors = neutralized = 0
    for i, entry in enumerate(entries):
        if type(entry) is not dict or entry.get("isCompactSummary") or entry.get("isMeta"):
            out.append(entry)
            continue
        content = blocks(entry)
        remove = False
        # A synthetic entry never carries a call; if one ever did, removing it would orphan its result.
        if (
            policy.drop_api_errors
            and is_api_error(entry)
            and not any(type(b) is dict and b.get("type") == "tool_use" for b in content)
        ):
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
            gone.add(i)
            out.append(entry)
            continue
        if policy.neutralize_interrupts and content and entry.get("type") == "user":
            current, hits = _neutralized(current, entry, content, policy.interrupt_text)
            neutralized += hits
        out.append(current)
    return out, gone, api_errors, neutralized


def _neutralized(current: Any, entry: Entry, content: list[Any], text: str) -> tuple[Any, int]:
    """``current`` with the results of interrupted calls replaced by ``text``, and how many there were."""
    hits = [
        j
        for j, b in enumerate(content)
        if type(b) is dict and b.get("type") == "tool_result" and is_interrupted(entry, b)
    ]
    if not hits:
        return current, 0
    new = list(content)
    for j in hits:
        new[j] = {**new[j], "content": text, "is_error": False}
    return replace_blocks(current, new), len(hits)


def _gone_uuids(entries: Sequence[Entry], gone: set[int], notes: list[str]) -> dict[str, Any]:
    """uuid of each removed entry -> its parentUuid (relinking walks up through it).

    A removed entry's uuid is gone only if no surviving entry carries it too (a duplicate line, a retried
    write): links to a uuid that still exists must keep pointing at it (noted in ``notes``).
    """
    drop: dict[str, Any] = {}
    for i in sorted(gone):
        uid = entries[i].get("uuid")
        if isinstance(uid, str):
            drop.setdefault(uid, entries[i].get("parentUuid"))
    if drop:
        for i, entry in enumerate(entries):
            uid = entry.get("uuid") if type(entry) is dict and i not in gone else None
            if isinstance(uid, str) and uid in drop:
                del drop[uid]
                notes.append(shared_uuid_note(uid))
    return drop


def _surviving_children(
    out: list[Any], gone: set[int], drop: Mapping[str, Any], survivor: Callable[[str], str | None]
) -> Callable[[str], Sequence[int]]:
    """``children_of(uid)`` after relinking: where a heal entry goes follows the links as they will be."""
    children: dict[str, list[int]] = {}
    for i, entry in enumerate(out):
        if i in gone or type(entry) is not dict:
            continue
        parent = entry.get("parentUuid")
        if type(parent) is str and parent in drop:
            parent = survivor(parent)
        if isinstance(parent, str):
            children.setdefault(parent, []).append(i)
    return lambda uid: children.get(uid, ())


def _assemble(
    out: list[Any],
    gone: set[int],
    drop: Mapping[str, Any],
    survivor: Callable[[str], str | None],
    heals: Mapping[int, list[str]],
    orphan_text: str,
) -> list[dict[str, Any]]:
    """Pass 3: drop, re-point every link (to the nearest survivor, then past a heal entry), insert the heals."""
    inserted = {tail: heal_entry(out[tail], ids, orphan_text) for tail, ids in heals.items()}
    heal_of = {
        out[tail].get("uuid"): heal["uuid"] for tail, heal in inserted.items() if isinstance(out[tail].get("uuid"), str)
    }
    final: list[dict[str, Any]] = []
    for i, entry in enumerate(out):
        if i in gone:
            continue
        final.append(repointed(entry, drop, survivor, heal_of) if type(entry) is dict else entry)
        if i in inserted:
            final.append(inserted[i])
    return final
