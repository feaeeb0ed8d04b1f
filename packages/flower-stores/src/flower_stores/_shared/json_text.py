"""`dumps`: an entry (or a run row) as JSON text a database can store, losslessly."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["dumps"]


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


# Built once: ``json.dumps`` with any option builds a new encoder per call, which costs more than encoding a
# small entry.
_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_encode_ascii = json.JSONEncoder(ensure_ascii=True, separators=(",", ":")).encode
