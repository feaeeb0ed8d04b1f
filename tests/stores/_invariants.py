"""An invariant checker for load-time rewrites, written from the spec and the harness's rules — not from flower_stores.

It imports nothing from the package under test: it reads a transcript the way Claude Code rebuilds a conversation
(walk ``parentUuid`` up from each leaf, merge consecutive same-role entries into one API message) and reports,
as plain sentences, every way the rewritten copy breaks what a resumed session needs:

- every ``tool_use`` on a conversation path is answered exactly once, in the next message;
- no ``parentUuid`` dangles or loops unless it already did in the raw copy (a rewrite never cuts history);
- compact summaries and meta entries keep their content (only their links may move);
- entries of any other type than user/assistant, and lines that are not objects, pass through unchanged;
- no synthetic API error entry and no "STOP … wait for the user" result is sent (when pruning ran);
- a trimmed result lost nothing: its text is in the spill file its pointer names, its other parts are still there.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

__all__ = ["check_rewrite", "conversation_paths"]

LINKS = ("parentUuid", "logicalParentUuid", "leafUuid")
STOP = "STOP what you are doing and wait for the user"
POINTER = re.compile(r"saved to (?P<path>\S+\.txt);")


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=True)


def _without_links(entry: dict[str, Any]) -> str:
    return _canon({k: v for k, v in entry.items() if k not in LINKS})


def _uid(entry: Any) -> str | None:
    uid = entry.get("uuid") if isinstance(entry, dict) else None
    return uid if isinstance(uid, str) else None


def _parent(entry: Any) -> str | None:
    parent = entry.get("parentUuid") if isinstance(entry, dict) else None
    return parent if isinstance(parent, str) else None


def _content(entry: dict[str, Any]) -> list[Any]:
    message = entry.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return content if isinstance(content, list) else []


def _results(entry: dict[str, Any]) -> list[dict[str, Any]]:
    return [b for b in _content(entry) if isinstance(b, dict) and b.get("type") == "tool_result"]


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            p.get("text", "")
            for p in content
            if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
        )
    return ""


def conversation_paths(entries: Sequence[Any]) -> list[list[dict[str, Any]]]:
    """Every root-to-leaf path of the parentUuid forest (leaves: uuids no entry names as its parent)."""
    by_uuid: dict[str, dict[str, Any]] = {}
    for entry in entries:
        uid = _uid(entry)
        if uid is not None:
            by_uuid[uid] = entry  # as the harness's map does: the last line with a uuid wins
    named = {_parent(e) for e in entries}
    paths = []
    for uid, leaf in by_uuid.items():
        if uid in named:
            continue
        path: list[dict[str, Any]] = []
        seen: set[str] = set()
        current: dict[str, Any] | None = leaf
        while current is not None and _uid(current) not in seen:
            seen.add(_uid(current))  # type: ignore[arg-type]
            path.append(current)
            parent = _parent(current)
            current = by_uuid.get(parent) if parent is not None else None
        paths.append(path[::-1])
    return paths


def _messages(path: Iterable[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
    """The API messages a path becomes: user/assistant entries with a message, consecutive same roles merged."""
    out: list[tuple[str, list[dict[str, Any]]]] = []
    for entry in path:
        role = entry.get("type")
        if role not in ("user", "assistant") or not isinstance(entry.get("message"), dict):
            continue
        if out and out[-1][0] == role:
            out[-1][1].append(entry)
        else:
            out.append((role, [entry]))
    return out


def _resume_leaf(entries: Sequence[Any]) -> str | None:
    """The leaf a resume continues from: the last user/assistant entry that no entry names as its parent."""
    named = {_parent(e) for e in entries}
    for entry in reversed(entries):
        uid = _uid(entry)
        if uid is not None and uid not in named and entry.get("type") in ("user", "assistant"):
            return uid
    return None


def _calls_answered(out: Sequence[Any]) -> list[str]:
    """Each call is answered exactly once by the message after it. A branch that simply ends on a call is a
    fragment (its answer sits on another branch, or on lines the file never had) — allowed everywhere except on
    the path a resume continues from, where the harness would send the call unanswered."""
    problems = []
    resume = _resume_leaf(out)
    for path in conversation_paths(out):
        messages = _messages(path)
        for n, (role, group) in enumerate(messages):
            if role != "assistant":
                continue
            calls = [
                b.get("id") for e in group for b in _content(e) if isinstance(b, dict) and b.get("type") == "tool_use"
            ]
            if not calls:
                continue
            if n + 1 == len(messages) and _uid(path[-1]) != resume:
                continue
            following = messages[n + 1][1] if n + 1 < len(messages) and messages[n + 1][0] == "user" else []
            answers = Counter(b.get("tool_use_id") for e in following for b in _results(e))
            for call in calls:
                if answers[call] != 1:
                    problems.append(
                        f"tool_use {call} is answered {answers[call]} times in the next message (path ending {_uid(path[-1])})"
                    )
    return problems


def _links_kept(raw: Sequence[Any], out: Sequence[Any]) -> list[str]:
    problems = []
    raw_uuids = {_uid(e) for e in raw} - {None}
    out_uuids = {_uid(e) for e in out} - {None}
    dangling_before = {(_uid(e), _parent(e)) for e in raw if _parent(e) is not None and _parent(e) not in raw_uuids}
    for entry in out:
        parent = _parent(entry)
        if parent is not None and parent not in out_uuids and (_uid(entry), parent) not in dangling_before:
            problems.append(f"entry {_uid(entry)} points at {parent}, which the rewritten transcript does not hold")

    def cycles(entries: Sequence[Any]) -> set[str]:
        parent_of = {_uid(e): _parent(e) for e in entries if _uid(e) is not None}
        looping = set()
        for start in parent_of:
            seen = set()
            current: str | None = start
            while current is not None and current in parent_of:
                if current in seen:
                    looping.add(start)
                    break
                seen.add(current)
                current = parent_of[current]
        return looping

    for uid in sorted(cycles(out) - cycles(raw)):
        problems.append(f"entry {uid} now sits on a parentUuid cycle")
    return problems


def _passed_through(raw: Sequence[Any], out: Sequence[Any]) -> list[str]:
    problems = []
    out_forms = Counter(_without_links(e) for e in out if isinstance(e, dict))
    for entry in raw:
        if not isinstance(entry, dict):
            continue
        protected = entry.get("isMeta") or entry.get("isCompactSummary")
        other_type = entry.get("type") not in ("user", "assistant")
        if (protected or other_type) and out_forms[_without_links(entry)] == 0:
            what = "protected" if protected else f"{entry.get('type')!r}"
            problems.append(f"{what} entry {_uid(entry)} was changed or dropped")
    raw_odd = Counter(_canon(e) for e in raw if not isinstance(e, dict))
    out_odd = Counter(_canon(e) for e in out if not isinstance(e, dict))
    if raw_odd != out_odd:
        problems.append(f"non-object lines changed: {dict(raw_odd)} -> {dict(out_odd)}")
    return problems


def _nothing_lost(raw: Sequence[Any], out: Sequence[Any], workspace: Path | None) -> list[str]:
    problems = []
    raw_results = {b.get("tool_use_id"): b for e in raw if isinstance(e, dict) for b in _results(e)}
    for entry in out:
        if not isinstance(entry, dict):
            continue
        for block in _results(entry):
            before = raw_results.get(block.get("tool_use_id"))
            if before is None or before == block:
                continue
            text = _text(block.get("content"))
            match = POINTER.search(text)
            if match is None:
                continue
            if workspace is not None:
                spill = Path(match["path"]) if Path(match["path"]).is_absolute() else workspace / match["path"]
                if not spill.is_file() or spill.read_text(encoding="utf-8", errors="surrogatepass") != _text(
                    before.get("content")
                ):
                    problems.append(f"the spill file of {block.get('tool_use_id')} does not hold its text")
            if isinstance(before.get("content"), list):
                kept = [_canon(p) for p in block.get("content", []) if isinstance(block.get("content"), list)]
                for part in before["content"]:
                    if not (isinstance(part, dict) and part.get("type") == "text") and _canon(part) not in kept:
                        problems.append(
                            f"a {part.get('type') if isinstance(part, dict) else type(part).__name__} part of {block.get('tool_use_id')} vanished"
                        )
    return problems


def _clean(out: Sequence[Any]) -> list[str]:
    problems = []
    for entry in out:
        if not isinstance(entry, dict):
            continue
        message = entry.get("message")
        if entry.get("isApiErrorMessage") or (isinstance(message, dict) and message.get("model") == "<synthetic>"):
            problems.append(f"synthetic API error {_uid(entry)} is still sent")
        if entry.get("isMeta") or entry.get("isCompactSummary"):
            continue
        for block in _results(entry):
            if STOP in _text(block.get("content")):
                problems.append(
                    f"result of {block.get('tool_use_id')} still tells the model to stop and wait for the user"
                )
    return problems


def check_rewrite(raw: Sequence[Any], out: Sequence[Any], *, pruned: bool, workspace: Path | None = None) -> list[str]:
    """Every invariant ``out`` (a rewrite of ``raw``) breaks, as sentences; empty when it is sound.

    ``pruned``: the rewrite ran the pruning step (heal, drop API errors, neutralise interrupts), so calls must be
    answered and nothing synthetic may remain. Without it only the structural invariants apply.
    """
    problems = _links_kept(raw, out) + _passed_through(raw, out) + _nothing_lost(raw, out, workspace)
    if pruned:
        problems += _calls_answered(out) + _clean(out)
    return problems
