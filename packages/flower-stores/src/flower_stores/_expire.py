"""Expiry: replace stale results of read-only glances with a short "expired" note."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._entries import Entry, block_text, is_protected, replace_blocks, tool_result_blocks, tool_use_blocks
from ._ephemeral import is_ephemeral_call
from ._policies import EphemeralPolicy
from ._report import LoadReport
from ._rewritten import Rewritten

__all__ = ["expire"]


def expire(entries: Sequence[Entry], policy: EphemeralPolicy | None = None) -> Rewritten:
    """Replace all but the newest ``policy.keep_recent`` glance results with an "expired" note.

    A glance is a Bash call that `is_ephemeral_call` accepts — the same predicate that lets a coordinator run
    it. Results longer than ``policy.max_chars`` are left for `trim`; compact summaries and meta entries are
    never touched. The input is not modified.
    """
    policy = policy or EphemeralPolicy()
    if not policy.enabled:
        return Rewritten(list(entries), LoadReport())  # type: ignore[arg-type]
    commands: dict[Any, str] = {}
    for entry in entries:
        for block in tool_use_blocks(entry):
            if is_ephemeral_call(block.get("name"), block.get("input")):  # type: ignore[arg-type]
                commands[block.get("id")] = block["input"]["command"]
    if not commands:
        return Rewritten(list(entries), LoadReport())  # type: ignore[arg-type]

    sites: list[tuple[int, int, str]] = []
    for i, entry in enumerate(entries):
        if is_protected(entry):
            continue
        for j, block in tool_result_blocks(entry):
            command = commands.get(block.get("tool_use_id"))
            if command is None:
                continue
            text = block_text(block)
            if text is not None and len(text) <= policy.max_chars:
                sites.append((i, j, command))
    keep = max(policy.keep_recent, 0)
    targets = sites[: len(sites) - keep] if keep else sites
    if not targets:
        return Rewritten(list(entries), LoadReport())  # type: ignore[arg-type]

    # Age counts glance results, newest last: the oldest target is len(sites) results ago.
    by_entry: dict[int, dict[int, str]] = {}
    for n, (i, j, command) in enumerate(targets):
        by_entry.setdefault(i, {})[j] = policy.placeholder(command, len(sites) - n)
    out: list[Any] = list(entries)
    for i, replacements in by_entry.items():
        content = list(out[i]["message"]["content"])
        for j, note in replacements.items():
            content[j] = {**content[j], "content": note}
        out[i] = replace_blocks(out[i], content)
    return Rewritten(out, LoadReport(expired=len(targets)))
