"""Reading stored payloads back: parsed a slice at a time, and the context size of the latest model call."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from .._shared.usage import usage_tokens

__all__ = ["context_tokens", "parsed"]

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
