"""What every backend shares: the error type, the ``store_key`` layout, serialisation, parsing, the usage sum."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from claude_agent_sdk import SessionKey, SessionListSubkeysKey, SessionStoreEntry, SessionSummaryEntry

__all__ = [
    "StoreError",
    "context_tokens",
    "dumps",
    "fold_summary",
    "parsed",
    "prefix_range",
    "store_key",
    "usage_tokens",
]


class StoreError(RuntimeError):
    """The session store cannot be opened or used (a bad path or URL, an unreachable server, a missing driver).

    The message is one line that says what is wrong and what to do.
    """


def store_key(key: SessionKey | SessionListSubkeysKey) -> str:
    """``project_key/session_id[/subpath]``: the layout of ``entries.store_key`` and ``meta.store_key``, the same as
    in the original flower's ``sessions.db`` (docs/compatibility.md)."""
    subpath = cast("dict[str, Any]", key).get("subpath")
    base = f"{key['project_key']}/{key['session_id']}"
    return f"{base}/{subpath}" if subpath else base


def prefix_range(prefix: str) -> tuple[str, str]:
    """Bounds of every string starting with ``prefix`` (which ends in "/"): an index range, no LIKE escaping.

    ``"/"`` is U+002F and ``"0"`` U+0030, so ``[p + "/", p + "0")`` holds exactly the keys under ``p/`` — in
    code-point order, which is why the PostgreSQL schema declares its key columns ``COLLATE "C"``.
    """
    assert prefix.endswith("/")
    return prefix, prefix[:-1] + "0"


def dumps(entry: Any) -> str:
    """The entry as JSON text a database can store: UTF-8 as is, escaped only where UTF-8 cannot hold it.

    A lone surrogate (``"\\ud83d"`` — a tool output cut inside an emoji) is valid JSON and a valid Python str,
    but not encodable UTF-8, so binding it would fail the whole batch. Such an entry is written with ASCII
    escapes instead, which ``json.loads`` turns back into the very same string: stored losslessly.
    """
    payload = _encode(entry)
    if not payload.isascii():
        try:
            payload.encode("utf-8")
        except UnicodeEncodeError:
            payload = _encode_ascii(entry)
    return payload


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


# Built once: ``json.dumps`` with any option builds a new encoder per call, which costs more than encoding a
# small entry.
_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_encode_ascii = json.JSONEncoder(ensure_ascii=True, separators=(",", ":")).encode


# Rows are parsed as one JSON array per slice of about this many characters (and at most _ROWS_PER_PARSE rows):
# one ``json.loads`` per row costs more than the parse itself for small entries — the decoder's Python-level
# setup runs per call, and its key cache (which makes every "parentUuid" one shared string) is per call too —
# while one parse of a whole 20 MB transcript would hold the GIL for its whole duration and freeze the event
# loop the load runs beside. A slice holds the GIL for a millisecond or two.
_CHARS_PER_PARSE = 1 << 18
_ROWS_PER_PARSE = 256


def parsed(payloads: list[str]) -> Iterator[Any]:
    """The stored JSON texts, parsed in order, a slice at a time (see above)."""
    loads = json.loads
    start = 0
    n = len(payloads)
    while start < n:
        end = start
        size = 0
        while end < n and size < _CHARS_PER_PARSE and end - start < _ROWS_PER_PARSE:
            size += len(payloads[end])
            end += 1
        chunk = None
        if end - start > 1:
            try:
                chunk = loads("[" + ",".join(payloads[start:end]) + "]")
            except ValueError:
                chunk = None
            if chunk is not None and len(chunk) != end - start:
                chunk = None  # a row that is not one JSON value (a damaged file): let it fail on its own below
        if chunk is None:
            chunk = [loads(p) for p in payloads[start:end]]
        yield from chunk
        start = end


def context_tokens(payloads: Any) -> int:
    """Input + cache-read + cache-creation tokens of the first entry (newest first) whose usage is non-zero.

    ``payloads`` are stored JSON texts, newest first; synthetic error entries report zero usage and are passed
    over, as is anything that does not parse.
    """
    for payload in payloads:
        try:
            entry = json.loads(payload)
        except ValueError:
            continue
        total = usage_tokens(entry)
        if total:
            return total
    return 0


def usage_tokens(entry: Any) -> int:
    """Input + cache-read + cache-creation tokens of one parsed entry's ``message.usage`` (0 if it has none)."""
    message = entry.get("message") if isinstance(entry, dict) else None
    usage = message.get("usage") if isinstance(message, dict) else None
    if not isinstance(usage, dict):
        return 0
    return sum(
        v
        for v in (
            usage.get("input_tokens"),
            usage.get("cache_read_input_tokens"),
            usage.get("cache_creation_input_tokens"),
        )
        if isinstance(v, int) and not isinstance(v, bool)
    )
