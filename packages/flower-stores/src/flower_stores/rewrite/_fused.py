"""The whole rewrite in one scan: what `rewrite` (and so every layered ``load``) runs.

`expire`, `trim` and `prune` are the readable definitions; run one after another they walk a transcript
five or six times. On a freshly loaded 20 MB session every entry is a cache miss, so each walk costs about as
much as all the real work — three of them would already make a layered load twice a raw one. This module
reads every entry once, decides everything from that scan, and then touches only the entries that change.

Its output equals ``prune(trim(expire(entries)))`` exactly (entries and report); a property test holds it
to that on generated transcripts, so the reference functions stay the specification.

``unique_uuids=True`` is for a caller whose backend never holds two entries with one uuid (our SQLite store's
unique index): the scan then skips collecting uuids to look for repeats.

``owned=True`` is for a caller that holds the only reference to ``entries`` — a fresh parse, as
`SqliteSessionStore.load` returns — and will not look at them again: the changed blocks are then rewritten
in place instead of copied along the path to the change. The result is equal either way (tested); the copies
are most of what is left of a layered load's cost once the scan is done.

``report_only=True`` (`rewrite_report`) computes the report and nothing else: no transcript is built, and the
scan keeps none of the parent links that only relinking needs. Every count comes from the same decisions as
the full rewrite; the two places that would need the links or every uuid — which message a heal entry follows,
and whether a removed uuid is shared — look them up from the entries only in the rare transcript that needs
it (see `_heal_count` and the shared-uuid pass). A property test holds it equal to the full rewrite's report.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from os import PathLike
from pathlib import Path
from typing import Any

from ..entries import INTERRUPT, Entry, all_but_newest, block_text, refusal, replaced_content
from ..glances import is_ephemeral_call
from ..report import LoadReport, Rewritten
from ._fit import fit
from ._links import heal_entry, heal_sites, relinked_parent, repointed, unanswered
from ._policies import EphemeralPolicy, PrunePolicy, TrimPolicy, first_line
from ._prune import shared_uuid_note
from ._trim import Spiller

__all__ = ["rewrite_once"]


class _NoteMaker:
    """``EphemeralPolicy.placeholder`` for thousands of results of a few commands: the template is filled in
    once per command, then only the age is joined in (a ``str.format`` per result cost more than the scan)."""

    def __init__(self, template: str) -> None:
        self._template = template
        self._parts: dict[str, tuple[str, str] | None] = {}

    def __call__(self, command: str, age: int) -> str:
        if command not in self._parts:
            self._parts[command] = self._split(first_line(command))
        parts = self._parts[command]
        if parts is None:
            return self._template.format(cmd=first_line(command), age=age)
        return f"{parts[0]}{age}{parts[1]}"

    def _split(self, shown: str) -> tuple[str, str] | None:
        """The note before and after the age, or None when the template cannot be split that way (an age with
        a format spec such as ``{age:,}``, a NUL in the command or template): then each note is formatted whole."""
        try:
            filled = self._template.format(cmd=shown, age="\x00").split("\x00")
        except (ValueError, TypeError):
            return None
        return (filled[0], filled[1]) if len(filled) == 2 and "\x00" not in shown else None


def _surviving_children(
    entries: list[Any], children_of: Callable[[str], list[int]], removed: Mapping[int, bool]
) -> Callable[[str], list[int]]:
    """``kids(uid)``: the surviving children of ``uid`` after relinking — its own, and those below any run of
    removed entries between them (``removed``: index -> whether its uuid is gone)."""
    relinked: dict[str, list[int]] = {}

    def kids(uid: str) -> list[int]:
        # Iterative: a recursive closure would be a reference cycle holding the whole transcript until the
        # next full GC.
        if uid not in relinked:
            found: list[int] = []
            below = [uid]
            while below:
                for c in children_of(below.pop()):
                    if c not in removed:
                        found.append(c)
                    elif removed[c]:  # a removed entry whose uuid is gone: its children come up to uid
                        below.append(entries[c]["uuid"])
            relinked[uid] = sorted(found)
        return relinked[uid]

    return kids


def _heal_count(entries: list[Any], orphans_at: Mapping[int, list[str]], removed: Mapping[int, bool]) -> int:
    """How many results the full rewrite's heal entries carry, without building them.

    A heal entry goes after the last piece of each message (`heal_sites`) and carries each orphan id of its
    pieces once, so the count is the sum, over messages, of their distinct orphan ids. When no id is orphaned
    in two entries (every transcript Claude Code writes: a call id is unique), which pieces share a message
    cannot change that sum: it is each entry's distinct ids, summed. Otherwise the messages are found as the
    full rewrite finds them, through the parent links, looked up here and only here.
    """
    distinct = [set(ids) for ids in orphans_at.values()]
    if len(set().union(*distinct)) == sum(len(ids) for ids in distinct):
        return sum(len(ids) for ids in distinct)
    children: dict[str, list[int]] = {}
    for i, entry in enumerate(entries):
        parent = entry.get("parentUuid") if type(entry) is dict else None
        if type(parent) is str:
            children.setdefault(parent, []).append(i)
    kids = _surviving_children(entries, lambda uid: children.get(uid, []), removed)
    return sum(len(ids) for ids in heal_sites(entries, orphans_at, kids).values())


def rewrite_once(
    source: Iterable[Entry],
    workspace: str | PathLike[str],
    ephemeral: EphemeralPolicy | None,
    trim_policy: TrimPolicy | None,
    prune_policy: PrunePolicy | None,
    write_spill: bool = True,
    owned: bool = False,
    unique_uuids: bool = False,
    report_only: bool = False,
) -> Rewritten:
    """`rewrite` in one scan (see the module docstring): the hot path of every layered load.

    It is the one function of flower-stores longer than 80 lines, on purpose: the scan, the decisions and the
    build share a dozen flat tables, and splitting them into functions would pass those tables around (or
    allocate per entry) on the path the layered-load benchmark (``benchmarks/stores.py``) measures. Its
    correctness rests on the property tests that hold it equal to the reference steps
    (``tests/stores/test_engine.py``), not on its length.
    """
    if trim_policy is not None and trim_policy.budget is not None:
        # A size budget: the rewrite without it, then `fit` on what it built (a report needs the built
        # transcript too, to measure it; nothing is written then).
        unbounded = dataclasses.replace(trim_policy, budget=None)
        spill = write_spill and not report_only
        done = rewrite_once(source, workspace, ephemeral, unbounded, prune_policy, spill, owned, unique_uuids)
        fitted = fit(done.entries, trim_policy.budget, trim_policy, workspace, write_spill=spill)
        return Rewritten([] if report_only else fitted.entries, done.report + fitted.report)
    do_expire = ephemeral is not None and ephemeral.enabled
    do_trim = trim_policy is not None and (trim_policy.enabled or trim_policy.mask_over is not None)
    do_prune = prune_policy is not None
    if not (do_expire or do_trim or do_prune):
        return Rewritten(list(source), LoadReport())  # type: ignore[arg-type]

    # --- the scan ----------------------------------------------------------------------------------------
    # The scan allocates as few containers as it can: on a 10,000-entry load every list or tuple made per
    # entry or block is tens of thousands of objects, enough to set off an extra full garbage collection over
    # the whole freshly parsed transcript — which costs more than the scan itself. So the per-entry facts go
    # into flat dicts of ints and parallel lists, with a side table for the rare second occurrence.
    commands: dict[Any, str] = {}  # ephemeral Bash calls seen so far: tool_use id -> command
    # Results in unprotected user entries, as parallel lists: entry index, block index, block, glance command.
    site_i: list[int] = []
    site_j: list[int] = []
    site_block: list[dict[str, Any]] = []
    site_cmd: list[str | None] = []
    # ... and the length of its text (-1: none to replace — images, documents, no text), measured while the
    # block is in cache: expiry and trimming then choose their targets without touching a block again.
    site_len: list[int] = []
    first_child: dict[str, int] = {}  # parentUuid -> the first entry naming it
    more_children: dict[str, list[int]] = {}  # ... and the others (a fork, a retried turn)
    other_links: list[int] = []  # entries with a leafUuid or logicalParentUuid
    call_i: list[int] = []  # tool_use blocks of assistant entries: entry index, tool id (parallel lists)
    call_id: list[str] = []
    answered: set[Any] = set()
    in_protected: set[Any] = set()
    # tool id -> the first unprotected entry holding its tool_use / its tool_result, and any further ones
    use_at: dict[Any, int] = {}
    result_at: dict[Any, int] = {}
    more_holders: dict[Any, list[int]] = {}
    width = 1  # the longest content list: block (i, j) is keyed by the int i * width + j, not a tuple
    api_error_at: list[int] = []
    # Results the harness wrote instead of running the call (see `refusal`), as (entry, block) pairs, in order.
    denial_blocks: list[tuple[int, str]] = []  # ... whose kind the policy prunes: entry index, tool id
    interrupt_blocks: list[tuple[int, int]] = []  # ... of interrupted calls in user entries
    notes: list[str] = []  # malformed entries passed through (as `odd_entries` words them)
    kinds = prune_policy.denial_kinds if prune_policy is not None else frozenset()
    # ``source`` may be a generator that parses each line as it is asked for (`SqliteSessionStore`'s rows):
    # the scan then reads each entry while its freshly built dicts are still in cache, instead of walking a
    # whole parsed transcript again. The list is built here either way; every later step indexes into it.
    entries: list[Any] = []
    keep = entries.append
    uids: list[str] = []  # every entry's uuid: only to learn whether any repeats
    keep_uid = uids.append
    links = not report_only  # relinking's bookkeeping: the parent links, the other links, every uuid
    for i, entry in enumerate(source):
        keep(entry)
        if type(entry) is not dict:
            if do_prune:
                notes.append(f"entry {i} is a JSON {type(entry).__name__}, not an object: passed through")
            continue
        if links and not unique_uuids:
            uid = entry.get("uuid")
            if type(uid) is str:
                keep_uid(uid)
        parent = entry.get("parentUuid")
        if parent is not None:
            if type(parent) is not str:
                if do_prune:
                    notes.append(f"entry {i} has a parentUuid that is a {type(parent).__name__}: left as it is")
            elif not links:
                pass  # a report needs no parent links (the rare heal that does finds them itself)
            elif parent not in first_child:  # (two plain dict operations: cheaper than a setdefault call)
                first_child[parent] = i
            else:
                more_children.setdefault(parent, []).append(i)
        if links and ("leafUuid" in entry or "logicalParentUuid" in entry):
            other_links.append(i)
        etype = entry.get("type")
        message = entry.get("message")
        content = message.get("content") if type(message) is dict else None
        protected = bool(entry.get("isCompactSummary") or entry.get("isMeta"))
        has_call = False
        if type(content) is list:
            if len(content) > width:
                width = len(content)
            for j, block in enumerate(content):
                if type(block) is not dict:
                    continue
                kind = block.get("type")
                if kind == "tool_result":
                    tool_use_id = block.get("tool_use_id")
                    if type(tool_use_id) is not str:
                        continue
                    answered.add(tool_use_id)
                    if protected:
                        in_protected.add(tool_use_id)
                        continue
                    if tool_use_id not in result_at:
                        result_at[tool_use_id] = i
                    elif result_at[tool_use_id] != i:
                        more_holders.setdefault(tool_use_id, []).append(i)
                    # Only a marked entry or an error result can be the harness's words (see `refusal`).
                    why = refusal(entry, block) if block.get("is_error") or "toolDenialKind" in entry else None
                    if why is not None:  # the harness's words: never a site to expire or trim
                        if do_prune:
                            if why in kinds:
                                denial_blocks.append((i, tool_use_id))
                            elif why == INTERRUPT and etype == "user":
                                interrupt_blocks.append((i, j))
                        continue
                    if etype == "user":
                        site_i.append(i)
                        site_j.append(j)
                        site_block.append(block)
                        site_cmd.append(commands.get(tool_use_id))
                        c = block.get("content")
                        if type(c) is str:
                            site_len.append(len(c))
                        else:
                            text = block_text(block)
                            site_len.append(-1 if text is None else len(text))
                elif kind == "tool_use":
                    has_call = True
                    tool_id = block.get("id")
                    if type(tool_id) is not str:
                        continue
                    if protected:
                        in_protected.add(tool_id)
                    elif tool_id not in use_at:
                        use_at[tool_id] = i
                    elif use_at[tool_id] != i:
                        more_holders.setdefault(tool_id, []).append(i)
                    if etype == "assistant":
                        call_i.append(i)
                        call_id.append(tool_id)
                        if do_expire and block.get("name") == "Bash" and is_ephemeral_call("Bash", block.get("input")):
                            commands[tool_id] = block["input"]["command"]
        if protected or not do_prune:
            continue
        if not has_call and (
            entry.get("isApiErrorMessage") or (type(message) is dict and message.get("model") == "<synthetic>")
        ):  # is_api_error
            api_error_at.append(i)

    def children_of(uid: str) -> list[int]:
        first = first_child.get(uid)
        return [] if first is None else [first, *more_children.get(uid, ())]

    new_content: dict[int, str] = {}  # block content replaced by expiry or trimming, by i * width + j
    report = LoadReport()

    # --- expire --------------------------------------------------------------------------------------------
    if do_expire:
        assert ephemeral is not None
        max_chars = ephemeral.max_chars
        glances = [
            k for k, (cmd, size) in enumerate(zip(site_cmd, site_len)) if cmd is not None and 0 <= size <= max_chars
        ]
        targets = all_but_newest(glances, ephemeral.keep_recent)
        total = len(glances)
        note = _NoteMaker(ephemeral.text)
        for n, k in enumerate(targets):
            text = note(site_cmd[k] or "", total - n)
            new_content[site_i[k] * width + site_j[k]] = text
            site_len[k] = len(text)  # what trimming sees next
        report += LoadReport(expired=len(targets))

    # --- trim --------------------------------------------------------------------------------------------
    if do_trim and trim_policy is not None and not trim_policy.enabled:  # only a long session is masked
        do_trim = trim_policy.applies(sum(size for size in site_len if size > 0))
    if do_trim:
        assert trim_policy is not None
        root = Path(workspace).expanduser().resolve()
        min_chars = trim_policy.min_chars
        large = [k for k, size in enumerate(site_len) if size >= min_chars]  # sites whose text (after expiry) is large
        n_targets = len(all_but_newest(large, trim_policy.keep_recent))
        trimmed = saved = 0
        spiller = Spiller(trim_policy, root)
        for k in large[:n_targets]:
            pos = site_i[k] * width + site_j[k]
            text = new_content.get(pos)
            if text is None:
                text = block_text(site_block[k])
            if text is None:
                continue
            pointer = spiller.pointer(text, write=write_spill)
            if pointer is None:
                continue
            new_content[pos] = pointer
            trimmed += 1
            saved += max(len(text) - len(pointer), 0)
        report += LoadReport(trimmed=trimmed, kept=len(large) - n_targets, chars_saved=saved)

    # --- prune: decide ------------------------------------------------------------------------------------
    removed: dict[int, bool] = {}  # index -> gone (True: had a uuid, so relinking walks through it)
    drop: dict[str, Any] = {}  # uuid -> parentUuid of removed entries
    dead: set[str] = set()
    neutral: set[tuple[int, int]] = set()  # result blocks of interrupted calls
    blocks_out: dict[int, list[int]] = {}  # entries that lose the blocks of dropped denials: the indexes they keep
    lost_result: set[int] = set()
    heals: dict[int, list[str]] = {}
    if do_prune:
        assert prune_policy is not None
        denied = list(dict.fromkeys(tool_use_id for _, tool_use_id in denial_blocks))  # first appearance order
        candidates = all_but_newest(denied, prune_policy.keep_denials)
        dead = {x for x in candidates if x not in in_protected}

        api_errors = healed = 0
        if prune_policy.drop_api_errors:
            for i in api_error_at:
                removed[i] = isinstance(entries[i].get("uuid"), str)
                api_errors += 1
        holding = [*(use_at[d] for d in dead if d in use_at), *(result_at[d] for d in dead if d in result_at)]
        holding.extend(i for d in dead for i in more_holders.get(d, ()))
        touched = sorted({i for i in holding if i not in removed})
        for i in touched:
            content = entries[i]["message"]["content"]
            kept_at: list[int] = []
            for j, block in enumerate(content):
                if type(block) is dict and (
                    (block.get("type") == "tool_use" and block.get("id") in dead)
                    or (block.get("type") == "tool_result" and block.get("tool_use_id") in dead)
                ):
                    if block.get("type") == "tool_result":
                        lost_result.add(i)
                    continue
                kept_at.append(j)
            if kept_at:
                blocks_out[i] = kept_at
            else:
                removed[i] = isinstance(entries[i].get("uuid"), str)
        for i in sorted(removed):
            uid = entries[i].get("uuid")
            if type(uid) is str:
                drop.setdefault(uid, entries[i].get("parentUuid"))
        # A uuid a surviving entry also carries is not gone: links to it stay (see `prune`). Only a transcript
        # that repeats a uuid at all (rare) needs the pass that finds which.
        if drop and not unique_uuids and report_only:  # the uuids were not collected during the scan
            uids = [u for e in entries if type(e) is dict and type(u := e.get("uuid")) is str]
        if drop and not unique_uuids and len(uids) != len(set(uids)):
            for i, entry in enumerate(entries):
                if i not in removed and type(entry) is dict:
                    uid = entry.get("uuid")
                    if type(uid) is str and uid in drop:
                        del drop[uid]
                        notes.append(shared_uuid_note(uid))
        for i in removed:
            removed[i] = entries[i].get("uuid") in drop  # relinking walks up through it only if its uuid is gone

        if prune_policy.neutralize_interrupts:
            neutral = {
                (i, j) for i, j in interrupt_blocks if i not in removed and (i not in blocks_out or j in blocks_out[i])
            }

        survivor = relinked_parent(drop)
        if prune_policy.heal_orphans:
            settled = answered | dead
            calls_at: dict[int, list[str]] = {}
            for i, tool_id in zip(call_i, call_id):
                if tool_id not in settled:  # only the few unanswered calls get a list
                    calls_at.setdefault(i, []).append(tool_id)
            orphans_at = unanswered(calls_at, settled, skip=removed)
            if orphans_at and report_only:
                healed = _heal_count(entries, orphans_at, removed)
            elif orphans_at:
                heals = heal_sites(entries, orphans_at, _surviving_children(entries, children_of, removed))
        report += LoadReport(
            denials_dropped=len(dead),
            api_errors_dropped=api_errors,
            interrupts_neutralized=len(neutral),
            orphans_healed=healed if report_only else sum(len(ids) for ids in heals.values()),
            pruned=len(removed),
            notes=tuple(notes),
        )
    else:
        survivor = relinked_parent(drop)
    if report_only:
        return Rewritten([], report)

    inserted = (
        {tail: heal_entry(entries[tail], ids, prune_policy.orphan_text) for tail, ids in heals.items()}
        if prune_policy
        else {}
    )
    heal_of = {entries[t]["uuid"]: h["uuid"] for t, h in inserted.items() if isinstance(entries[t].get("uuid"), str)}

    # --- build: only entries that change are copied ----------------------------------------------------------
    relink_at: set[int] = set(other_links)
    for uid in (*drop, *heal_of):
        relink_at.update(children_of(uid))
    changed = {pos // width for pos in new_content}
    changed.update(i for i, _ in neutral)
    changed.update(blocks_out)
    neutral_at = {i * width + j for i, j in neutral}

    # Start from a copy of the list (one C call), replace the few entries that change, then remove and insert.
    out: list[Any] = list(entries)
    interrupt_text = prune_policy.interrupt_text if prune_policy is not None else ""
    for i in changed | relink_at:
        if i in removed:
            continue
        current: Any = out[i]
        if i in changed and owned:
            message = current["message"]
            content = message["content"]
            for j, block in enumerate(content):
                pos = i * width + j
                text = new_content.get(pos)
                if text is not None:
                    block["content"] = replaced_content(block, text)
                if pos in neutral_at:
                    block["content"] = interrupt_text
                    block["is_error"] = False
            if i in blocks_out:
                message["content"] = [content[j] for j in blocks_out[i]]
            if i in lost_result:
                current.pop("toolUseResult", None)
        elif i in changed:
            content = list(current["message"]["content"])
            for j in range(len(content)):
                pos = i * width + j
                text = new_content.get(pos)
                if text is not None:
                    content[j] = {**content[j], "content": replaced_content(content[j], text)}
                if pos in neutral_at:
                    content[j] = {**content[j], "content": interrupt_text, "is_error": False}
            if i in blocks_out:
                content = [content[j] for j in blocks_out[i]]
            current = {**current, "message": {**current["message"], "content": content}}
            if i in lost_result:
                current.pop("toolUseResult", None)
        if i in relink_at:
            current = repointed(current, drop, survivor, heal_of)
        out[i] = current
    if removed or inserted:
        # Copy the runs between the few removals and insertions as slices (C), not entry by entry.
        rebuilt: list[Any] = []
        start = 0
        for i in sorted({*removed, *inserted}):
            rebuilt += out[start:i]
            if i not in removed:
                rebuilt.append(out[i])
                if i in inserted:  # a heal entry goes right after the call it answers (never after a removed one)
                    rebuilt.append(inserted[i])
            start = i + 1
        rebuilt += out[start:]
        out = rebuilt
    return Rewritten(out, report)
