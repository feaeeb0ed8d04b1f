"""Keeping the ``parentUuid`` chain valid: `relink` after removals, `heal_orphans` for unanswered calls.

Claude Code rebuilds a conversation by walking ``parentUuid`` links up from the newest leaf, so a link to a
removed entry silently cuts off all earlier history. Both functions keep every surviving link pointing at a
surviving entry. Links of compact summaries and meta entries are re-pointed too when their parent goes:
their content is never touched, but leaving the link dangling would lose the history above them.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from ..entries import Entry, blocks
from ._policies import PrunePolicy

__all__ = ["heal_orphans", "relink"]

# The links that name another entry by uuid: the chain itself, a compact boundary's logical parent, and the
# leaf a "last-prompt"/"summary" entry points at (resume may start from it).
LINK_FIELDS = ("parentUuid", "logicalParentUuid", "leafUuid")

# Heal entries get uuid5(HEAL_NAMESPACE, <assistant uuid>): the same transcript always heals the same way.
HEAL_NAMESPACE = uuid.UUID("6f1d3c0e-5b1a-4f0e-9a53-2f8f6e3c1d47")

_COPIED_FIELDS = (
    "sessionId",
    "cwd",
    "gitBranch",
    "version",
    "agentId",
    "isSidechain",
    "userType",
    "entrypoint",
    "slug",
)


def relinked_parent(removed: Mapping[str, Any]) -> Callable[[str], str | None]:
    """``survivor(uid)``: the nearest ancestor of ``uid`` not in ``removed`` (a map uuid -> its parentUuid).

    A removed uuid whose parent is unknown (``None``) ends the walk at ``None``: a new root.
    """
    resolved: dict[str, str | None] = {}

    def survivor(uid: str) -> str | None:
        if uid in resolved:
            return resolved[uid]
        path: list[str] = []
        current: Any = uid
        while isinstance(current, str) and current in removed and current not in path:  # the guard stops cycles
            path.append(current)
            current = removed[current]
        found = current if isinstance(current, str) and current not in removed else None
        for step in path:  # memoise the whole walk: long runs of removals stay linear
            resolved[step] = found
        return found

    return survivor


def relink(entries: Sequence[Entry], drop: Collection[str]) -> list[dict[str, Any]]:
    """``entries`` without those whose uuid is in ``drop``, every link re-pointed to the nearest survivor.

    Pass the *full* list, removed entries included: the walk up to a surviving ancestor goes through them.
    A link whose whole ancestry is removed becomes ``None`` (a new root). The input is not modified.
    """
    dropped = set(drop)
    if not dropped:
        return list(entries)  # type: ignore[arg-type]
    # A uuid in ``drop`` that is not in the list (a caller filtered first) has no known parent: links to it
    # become None rather than dangle.
    removed: dict[str, Any] = dict.fromkeys(dropped)
    removed.update({e["uuid"]: e.get("parentUuid") for e in entries if type(e) is dict and _uid(e) in dropped})
    survivor = relinked_parent(removed)
    out: list[dict[str, Any]] = []
    for entry in entries:
        if type(entry) is not dict:
            out.append(entry)  # type: ignore[arg-type]  # not an entry at all: passed through as it is
            continue
        if _uid(entry) in removed:
            continue
        changes = _links_into(entry, removed)
        if changes:
            out.append({**entry, **{name: survivor(target) for name, target in changes.items()}})
        else:
            out.append(entry)
    return out


def _uid(entry: Entry) -> str | None:
    uid = entry.get("uuid")
    return uid if type(uid) is str else None


def _links_into(entry: Entry, targets: Collection[str]) -> dict[str, str] | None:
    """The link fields of ``entry`` that name one of ``targets`` (None, cheaply, when there are none).

    Only a string names an entry: a malformed link (a list, a dict) is left as it is, never looked up.
    """
    found: dict[str, str] | None = None
    for name in LINK_FIELDS:
        value = entry.get(name)
        if type(value) is str and value in targets:
            if found is None:
                found = {}
            found[name] = value
    return found


def _message_id(entry: Entry) -> Any:
    message = entry.get("message")
    return message.get("id") if type(message) is dict else None


def tail_of(entries: Sequence[Any], i: int, children_of: Callable[[str], Sequence[int]]) -> int:
    """The last entry of the assistant message that ``entries[i]`` belongs to.

    Claude Code stores one assistant message as several entries — one per content block, same
    ``message.id``, each the child of the previous one. The answer to its calls goes after the last of them.
    """
    seen = {i}
    mid = _message_id(entries[i])
    while mid is not None:
        uid = entries[i].get("uuid")
        nxt = None
        if isinstance(uid, str):
            for c in children_of(uid):
                if c not in seen and entries[c].get("type") == "assistant" and _message_id(entries[c]) == mid:
                    nxt = c
                    break
        if nxt is None:
            break
        seen.add(nxt)
        i = nxt
    return i


def _hashable(value: Any) -> bool:
    return value is None or type(value) in (str, int, float, bool)


def unanswered(
    calls_at: Mapping[int, Sequence[str]], answered: Collection[Any], skip: Collection[int] = ()
) -> dict[int, list[str]]:
    """Per assistant entry index (except those in ``skip``): its call ids that have no result in ``answered``."""
    out: dict[int, list[str]] = {}
    for i, ids in calls_at.items():
        if i in skip:
            continue
        missing = [x for x in ids if x not in answered]
        if missing:
            out[i] = missing
    return out


def heal_sites(
    entries: Sequence[Any], orphans_at: Mapping[int, Sequence[str]], children_of: Callable[[str], Sequence[int]]
) -> dict[int, list[str]]:
    """Where each heal entry goes: the tail index of each message with orphans -> its orphan ids, in order."""
    heals: dict[int, list[str]] = {}
    for i, ids in orphans_at.items():
        bucket = heals.setdefault(tail_of(entries, i, children_of), [])
        bucket.extend(x for x in ids if x not in bucket)
    return heals


def repointed(
    entry: Entry, drop: Collection[str], survivor: Callable[[str], str | None], heal_of: Mapping[str, str]
) -> Any:
    """``entry`` with each link to a removed entry moved to its nearest survivor, then past a heal entry.

    The same object when no link changes (most entries), so unchanged entries stay shared with the input.
    """
    changes: dict[str, Any] | None = None
    for name in LINK_FIELDS:
        value = entry.get(name)
        if type(value) is not str:
            continue  # no link, or a malformed one (a list, a dict): it names no entry, so it stays as it is
        target = survivor(value) if value in drop else value
        if target is not None and target in heal_of:
            target = heal_of[target]
        if target != value:
            if changes is None:
                changes = {}
            changes[name] = target
    return {**entry, **changes} if changes else entry


def heal_entry(assistant: Entry, tool_use_ids: Sequence[str], text: str) -> dict[str, Any]:
    """The synthetic user entry answering ``tool_use_ids`` right after ``assistant`` (uuid derived from its uuid)."""
    anchor = assistant.get("uuid")
    seed = anchor if isinstance(anchor, str) else "|".join(tool_use_ids)
    heal: dict[str, Any] = {"parentUuid": anchor if isinstance(anchor, str) else None}
    heal.update({name: assistant[name] for name in _COPIED_FIELDS if name in assistant})
    heal["type"] = "user"
    heal["message"] = {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": x, "content": text, "is_error": False} for x in tool_use_ids
        ],
    }
    heal["uuid"] = str(uuid.uuid5(HEAL_NAMESPACE, seed))
    if "timestamp" in assistant:
        heal["timestamp"] = assistant["timestamp"]
    if isinstance(anchor, str):
        heal["sourceToolAssistantUUID"] = anchor
    return heal


def heal_orphans(entries: Sequence[Entry], text: str | None = None) -> list[dict[str, Any]]:
    """Give every ``tool_use`` that has no ``tool_result`` anywhere a synthetic one.

    After the last entry of each assistant message with unanswered calls, one synthetic user entry is
    inserted carrying a result for each of them; **every** link that pointed at that entry now points at the
    inserted one, so the answer sits between the call and whatever followed. The inserted uuid is derived from
    the assistant entry's uuid, so the same input always gives the same output. The input is not modified.
    """
    return heal_orphans_counted(entries, text)[0]


def heal_orphans_counted(entries: Sequence[Entry], text: str | None = None) -> tuple[list[dict[str, Any]], int]:
    """`heal_orphans`, and how many tool_use blocks it answered."""
    note = text if text is not None else PrunePolicy().orphan_text
    answered: set[Any] = set()
    for entry in entries:
        if type(entry) is not dict:
            continue
        for block in blocks(entry):
            if type(block) is dict and block.get("type") == "tool_result" and _hashable(block.get("tool_use_id")):
                answered.add(block.get("tool_use_id"))
    orphans_at: dict[int, list[str]] = {}
    for i, entry in enumerate(entries):
        if type(entry) is not dict or entry.get("type") != "assistant":
            continue
        ids = [
            b["id"]
            for b in blocks(entry)
            if type(b) is dict
            and b.get("type") == "tool_use"
            and isinstance(b.get("id"), str)
            and b["id"] not in answered
        ]
        if ids:
            orphans_at[i] = ids
    if not orphans_at:
        return list(entries), 0  # type: ignore[arg-type]

    children: dict[str, list[int]] = {}
    for i, entry in enumerate(entries):
        parent = entry.get("parentUuid") if type(entry) is dict else None
        if isinstance(parent, str):
            children.setdefault(parent, []).append(i)
    heals = heal_sites(entries, orphans_at, lambda uid: children.get(uid, ()))
    inserted = {tail: heal_entry(entries[tail], ids, note) for tail, ids in heals.items()}
    repoint = {
        entries[tail]["uuid"]: heal["uuid"]
        for tail, heal in inserted.items()
        if isinstance(entries[tail].get("uuid"), str)
    }

    out: list[dict[str, Any]] = []
    for i, entry in enumerate(entries):
        changes = _links_into(entry, repoint) if type(entry) is dict else None
        out.append({**entry, **{name: repoint[target] for name, target in changes.items()}} if changes else entry)  # type: ignore[arg-type]
        if i in inserted:
            out.append(inserted[i])
    return out, sum(len(ids) for ids in heals.values())
