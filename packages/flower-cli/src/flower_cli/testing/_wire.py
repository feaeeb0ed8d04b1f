"""How a reply looks on the wire: the Messages API's JSON message, its SSE events, its error body and usage.

Pure functions of the request body and the reply; the server writes what they return. The shapes are the real
API's (``message_start`` … ``message_stop``, usage with the cache fields), so the real client parses them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from ._replies import Turn

__all__ = ["Event", "dropped_events", "error_body", "estimate_tokens", "message_json", "turn_events", "usage_of"]

Event = tuple[str, dict[str, Any]]  # (event name, data)

_CHUNK = 2000  # characters per delta: long answers arrive in pieces, as from the real API


def estimate_tokens(data: Any) -> int:
    """About four characters a token: enough for a client that budgets by the reported counts."""
    return max(1, len(json.dumps(data, ensure_ascii=False)) // 4)


def error_body(error_type: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": error_type, "message": message}, "request_id": "req_scripted"}


def usage_of(body: dict[str, Any], reply: Turn) -> dict[str, int]:
    """The usage reported for ``reply``: the scripted counts, the missing ones estimated from the bytes."""
    u = reply.usage
    input_tokens = u.input_tokens
    if input_tokens is None:
        input_tokens = estimate_tokens([body.get("system"), body.get("messages")])
    output_tokens = u.output_tokens
    if output_tokens is None:
        output_tokens = estimate_tokens([b if isinstance(b, str) else b.input for b in reply.blocks])
    return {
        "input_tokens": input_tokens,
        "cache_creation_input_tokens": u.cache_creation_input_tokens,
        "cache_read_input_tokens": u.cache_read_input_tokens,
        "output_tokens": output_tokens,
    }


def message_json(body: dict[str, Any], reply: Turn, message_id: str) -> dict[str, Any]:
    """The whole message, for a request that does not stream."""
    content = [
        {"type": "text", "text": b}
        if isinstance(b, str)
        else {"type": "tool_use", "id": b.id, "name": b.name, "input": b.input}
        for b in reply.blocks
    ]
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "claude-scripted"),
        "content": content,
        "stop_reason": reply.final_stop_reason(),
        "stop_sequence": None,
        "usage": usage_of(body, reply),
    }


def _message_start(body: dict[str, Any], usage: dict[str, int], message_id: str) -> Event:
    message = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "claude-scripted"),
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {**usage, "output_tokens": 1},
    }
    return "message_start", {"type": "message_start", "message": message}


def _block_start(index: int, block: dict[str, Any]) -> Event:
    return "content_block_start", {"type": "content_block_start", "index": index, "content_block": block}


def _delta(index: int, delta: dict[str, Any]) -> Event:
    return "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}


def _chunks(text: str) -> list[str]:
    return [text[i : i + _CHUNK] for i in range(0, len(text), _CHUNK)] or [""]


def turn_events(body: dict[str, Any], reply: Turn, message_id: str) -> Iterator[Event]:
    """The SSE events of a streamed ``reply``, from ``message_start`` to ``message_stop``."""
    usage = usage_of(body, reply)
    yield _message_start(body, usage, message_id)
    for index, block in enumerate(reply.blocks):
        if isinstance(block, str):
            yield _block_start(index, {"type": "text", "text": ""})
            for chunk in _chunks(block):
                yield _delta(index, {"type": "text_delta", "text": chunk})
        else:
            yield _block_start(index, {"type": "tool_use", "id": block.id, "name": block.name, "input": {}})
            for chunk in _chunks(json.dumps(block.input)):
                yield _delta(index, {"type": "input_json_delta", "partial_json": chunk})
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": reply.final_stop_reason(), "stop_sequence": None},
            "usage": {"output_tokens": usage["output_tokens"]},
        },
    )
    yield "message_stop", {"type": "message_stop"}


def dropped_events(body: dict[str, Any], partial: str, message_id: str) -> Iterator[Event]:
    """The start of a message that never ends: the events before a `Drop` cuts the stream."""
    yield _message_start(body, usage_of(body, Turn([partial])), message_id)
    yield _block_start(0, {"type": "text", "text": ""})
    yield _delta(0, {"type": "text_delta", "text": partial})
