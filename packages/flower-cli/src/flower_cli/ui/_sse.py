"""Server-sent events: the wire format, and `SseResponse`, a stream that keeps the connection alive while nothing
happens and ends when the reader leaves.

Why a comment line every few seconds: a proxy or a browser drops a silent connection, and the server learns a
reader has gone only when a write fails. Why its own ASGI response: the messages, the keep-alive and the watch for
the reader's leaving run as three tasks of one task group, each iterator read in a single task (anyio forbids an
async generator that yields inside a task group).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio

from ._token import Receive, Scope, Send

__all__ = ["KEEPALIVE_S", "SseResponse", "sse_message"]

KEEPALIVE_S = 10.0
_CLOSING_POLL_S = 0.2
_HEADERS = [
    (b"content-type", b"text/event-stream; charset=utf-8"),
    (b"cache-control", b"no-cache, no-transform"),
    (b"x-accel-buffering", b"no"),
]


def sse_message(data: Any, *, event: str | None = None, event_id: int | None = None) -> bytes:
    """One SSE message: ``data`` as JSON on one line (JSON never holds a raw newline), with its name and id."""
    lines = []
    if event_id is not None:
        lines.append(f"id: {event_id}")
    if event:
        lines.append(f"event: {event}")
    lines.append("data: " + json.dumps(data, ensure_ascii=False, default=str, separators=(",", ":")))
    return ("\n".join(lines) + "\n\n").encode()


class SseResponse:
    """An ASGI response streaming what ``messages()`` yields (already `sse_message`-encoded) until it ends or the
    reader disconnects, with a keep-alive comment every ``keepalive_s``."""

    def __init__(
        self,
        messages: Callable[[], AsyncIterator[bytes]],
        keepalive_s: float = KEEPALIVE_S,
        closing: Callable[[], bool] | None = None,
    ) -> None:
        self.messages = messages
        self.keepalive_s = keepalive_s
        # The server is stopping (Ctrl-C): the stream ends at once, rather than be cut mid-write later.
        self.closing = closing or (lambda: False)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": list(_HEADERS)})
        lock = anyio.Lock()

        async def write(chunk: bytes) -> None:
            async with lock:  # one ASGI send at a time: the messages and the keep-alive share the connection
                await send({"type": "http.response.body", "body": chunk, "more_body": True})

        async with anyio.create_task_group() as group:

            async def pump() -> None:
                await write(b": connected\n\n")  # the browser's EventSource reports "open" at once
                async for message in self.messages():
                    await write(message)
                group.cancel_scope.cancel()

            async def keepalive() -> None:
                quiet = 0.0
                while not self.closing():
                    await anyio.sleep(_CLOSING_POLL_S)
                    quiet += _CLOSING_POLL_S
                    if quiet >= self.keepalive_s:
                        quiet = 0.0
                        await write(b": keepalive\n\n")
                group.cancel_scope.cancel()

            async def watch() -> None:
                while (await receive())["type"] != "http.disconnect":
                    pass
                group.cancel_scope.cancel()

            group.start_soon(pump)
            group.start_soon(keepalive)
            group.start_soon(watch)
        await send({"type": "http.response.body", "body": b"", "more_body": False})
