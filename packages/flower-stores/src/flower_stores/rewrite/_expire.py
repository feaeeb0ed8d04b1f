"""Expiry: replace stale results of read-only glances with a short "expired" note."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..entries import Entry, all_but_newest, block_text, refusal, replace_blocks, replaced_content
from ..glances import is_ephemeral_call
from ..report import LoadReport, Rewritten
from ._policies import EphemeralPolicy

__all__ = ["expire"]


def expire(entries: Sequence[Entry], policy: EphemeralPolicy | None = None) -> Rewritten:
    """Replace all but the newest ``policy.keep_recent`` glance results with an "expired" note.

    A glance is a Bash call that `is_ephemeral_call` accepts — the same predicate that lets a coordinator run
    it. Results longer than ``policy.max_chars`` are left for `trim`; compact summaries and meta entries are
    never touched. A result the harness wrote instead of running the call — a denial, a rejection, an
    interrupt (see `refusal`) — is never a glance result: the denial kept on purpose must keep saying
    "denied", not "expired; rerun it". Entries that are not objects pass through. The input is not modified.
    """
    policy = policy or EphemeralPolicy()
    if not policy.enabled:
        return Rewritten(list(entries), LoadReport())  # type: ignore[arg-type]
    # One pass: calls live in assistant entries and come before their results, which live in user entries.
    commands: dict[Any, str] = {}
    sites: list[tuple[int, int, str]] = []
    max_chars = policy.max_chars
    for i, entry in enumerate(entries):
        if type(entry) is not dict:
            continue
        kind = entry.get("type")
        if kind != "assistant" and (kind != "user" or not commands):
            continue
        message = entry.get("message")
        content = message.get("content") if type(message) is dict else None
        if type(content) is not list:
            continue
        if kind == "assistant":
            for block in content:
                if (
                    type(block) is dict
                    and block.get("type") == "tool_use"
                    and block.get("name") == "Bash"
                    and is_ephemeral_call("Bash", block.get("input"))
                ):
                    commands[block.get("id")] = block["input"]["command"]
            continue
        if entry.get("isCompactSummary") or entry.get("isMeta"):
            continue
        for j, block in enumerate(content):
            if type(block) is not dict or block.get("type") != "tool_result":
                continue
            command = commands.get(block.get("tool_use_id"))
            if command is None or refusal(entry, block) is not None:
                continue
            text = block_text(block)
            if text is not None and len(text) <= max_chars:
                sites.append((i, j, command))
    targets = all_but_newest(sites, policy.keep_recent)
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
            content[j] = {**content[j], "content": replaced_content(content[j], note)}
        out[i] = replace_blocks(out[i], content)
    return Rewritten(out, LoadReport(expired=len(targets)))
