"""Keeping the ``parentUuid`` chain valid: `relink` after removals, `heal_orphans` for unanswered calls.

Claude Code rebuilds a conversation by walking ``parentUuid`` links up from the newest leaf, so a link to a
removed entry silently cuts off all earlier history. Both functions keep every surviving link pointing at a
surviving entry. Links of compact summaries and meta entries are re-pointed too when their parent goes:
their content is never touched, but leaving the link dangling would lose the history above them.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Sequence
from typing import Any

from ._entries import Entry, tool_result_blocks, tool_use_blocks
from ._policies import PrunePolicy

__all__ = ["heal_orphans", "relink"]

# The links that name another entry by uuid: the chain itself, a compact boundary's logical parent, and the
# leaf a "last-prompt"/"summary" entry points at (resume may start from it).
LINK_FIELDS = ("parentUuid", "logicalParentUuid", "leafUuid")

# Heal entries get uuid5(HEAL_NAMESPACE, <assistant uuid>): the same transcript always heals the same way.
HEAL_NAMESPACE = uuid.UUID("6f1d3c0e-5b1a-4f0e-9a53-2f8f6e3c1d47")

_COPIED_FIELDS = ("sessionId", "cwd", "gitBranch", "version", "agentId", "isSidechain", "userType", "entrypoint", "slug")


def relink(entries: Sequence[Entry], drop: Collection[str]) -> list[dict[str, Any]]:
    """``entries`` without those whose uuid is in ``drop``, every link re-pointed to the nearest survivor.

    Pass the *full* list, removed entries included: the walk up to a surviving ancestor goes through them.
    A link whose whole ancestry is removed becomes ``None`` (a new root). The input is not modified.
    """
    dropped = set(drop)
    if not dropped:
        return list(entries)  # type: ignore[arg-type]
    parent: dict[str, Any] = {}
    for entry in entries:
        uid = entry.get("uuid")
        if isinstance(uid, str):
            parent[uid] = entry.get("parentUuid")
    resolved: dict[str, str | None] = {}

    def survivor(uid: str) -> str | None:
        if uid in resolved:
            return resolved[uid]
        path: list[str] = []
        current: Any = uid
        while isinstance(current, str) and current in dropped and current not in path:
            path.append(current)
            current = parent.get(current)
        found = current if isinstance(current, str) and current not in dropped else None
        for step in path:  # memoise the whole walk: long runs of removals stay linear
            resolved[step] = found
        return found

    out: list[dict[str, Any]] = []
    for entry in entries:
        if entry.get("uuid") in dropped:
            continue
        changes = {name: survivor(entry[name]) for name in LINK_FIELDS if isinstance(entry.get(name), str) and entry[name] in dropped}
        out.append({**entry, **changes} if changes else entry)  # type: ignore[arg-type]
    return out


def _message_id(entry: Entry) -> Any:
    message = entry.get("message")
    return message.get("id") if isinstance(message, dict) else None


def heal_orphans(entries: Sequence[Entry], text: str | None = None) -> list[dict[str, Any]]:
    """Give every ``tool_use`` that has no ``tool_result`` anywhere a synthetic one.

    Claude Code stores one assistant message as several entries (one per content block, same ``message.id``,
    chained). After the last entry of each message with unanswered calls, one synthetic user entry is inserted
    carrying a result for each of them; **every** link that pointed at that entry now points at the inserted
    one, so the answer sits between the call and whatever followed. The inserted uuid is derived from the
    assistant entry's uuid, so the same input always gives the same output. The input is not modified.
    """
    return heal_orphans_counted(entries, text)[0]


def heal_orphans_counted(entries: Sequence[Entry], text: str | None = None) -> tuple[list[dict[str, Any]], int]:
    """`heal_orphans`, and how many tool_use blocks it answered."""
    note = text if text is not None else PrunePolicy().orphan_text
    answered = {block.get("tool_use_id") for entry in entries for _, block in tool_result_blocks(entry)}
    orphans_at: dict[int, list[str]] = {}
    for i, entry in enumerate(entries):
        if entry.get("type") != "assistant":
            continue
        ids = [b.get("id") for b in tool_use_blocks(entry) if isinstance(b.get("id"), str) and b.get("id") not in answered]
        if ids:
            orphans_at[i] = ids
    if not orphans_at:
        return list(entries), 0  # type: ignore[return-value]

    children: dict[str, list[int]] = {}
    for i, entry in enumerate(entries):
        p = entry.get("parentUuid")
        if isinstance(p, str):
            children.setdefault(p, []).append(i)

    def tail_of(i: int) -> int:
        """The last entry of the assistant message ``entries[i]`` starts (same message.id, chained)."""
        seen = {i}
        mid = _message_id(entries[i])
        while mid is not None:
            uid = entries[i].get("uuid")
            nxt = next(
                (c for c in children.get(uid, ()) if c not in seen and entries[c].get("type") == "assistant" and _message_id(entries[c]) == mid),
                None,
            ) if isinstance(uid, str) else None
            if nxt is None:
                break
            seen.add(nxt)
            i = nxt
        return i

    heals: dict[int, list[str]] = {}  # tail index -> orphan ids of its whole message, in order
    for i, ids in orphans_at.items():
        bucket = heals.setdefault(tail_of(i), [])
        bucket.extend(x for x in ids if x not in bucket)

    inserted: dict[int, dict[str, Any]] = {}
    repoint: dict[str, str] = {}
    for tail, ids in heals.items():
        assistant = entries[tail]
        anchor = assistant.get("uuid")
        seed = anchor if isinstance(anchor, str) else "|".join(ids)
        heal_uuid = str(uuid.uuid5(HEAL_NAMESPACE, seed))
        heal: dict[str, Any] = {"parentUuid": anchor if isinstance(anchor, str) else None}
        heal.update({name: assistant[name] for name in _COPIED_FIELDS if name in assistant})
        heal.update(
            {
                "type": "user",
                "message": {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": x, "content": note, "is_error": False} for x in ids],
                },
                "uuid": heal_uuid,
            }
        )
        if "timestamp" in assistant:
            heal["timestamp"] = assistant["timestamp"]
        if isinstance(anchor, str):
            heal["sourceToolAssistantUUID"] = anchor
            repoint[anchor] = heal_uuid
        inserted[tail] = heal

    out: list[dict[str, Any]] = []
    for i, entry in enumerate(entries):
        changes = {name: repoint[entry[name]] for name in LINK_FIELDS if isinstance(entry.get(name), str) and entry[name] in repoint}
        out.append({**entry, **changes} if changes else entry)  # type: ignore[arg-type]
        if i in inserted:
            out.append(inserted[i])
    return out, sum(len(ids) for ids in heals.values())
