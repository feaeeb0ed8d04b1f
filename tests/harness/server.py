"""A scripted Anthropic Messages API on 127.0.0.1, for driving the real Claude Code binary offline.

The server runs in its own threads, so it keeps answering while a test's event loop is busy. Each
``POST /v1/messages`` takes the first queued step that accepts it; the reply is streamed as SSE the way the
real API does (``message_start`` … ``message_stop`` with usage). Before a step is taken the request is
checked the way the real API checks it (every ``tool_use`` answered, no empty text): a broken request gets
the API's 400 and consumes nothing. Every request is recorded.

The server can go away and come back on the same port (`stop` / `start`, or an `Outage` step), which is how
the tests produce a dropped network without touching the machine's network.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .recorded import RecordedRequest
from .replies import After, ApiError, Drop, Hang, Outage, Reply, Step, Text, Turn, attached_steps
from .validation import validate_messages

__all__ = ["ScriptedServer"]

EXHAUSTED_TEXT = "(scripted server: no step left for this request)"


def _estimate_tokens(data: Any) -> int:
    return max(1, len(json.dumps(data, ensure_ascii=False)) // 4)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], owner: ScriptedServer) -> None:
        self.owner = owner
        super().__init__(address, _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        self.owner._track(request)
        super().process_request(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the recorded requests are the log

    def _read_body(self) -> bytes:
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length) if length else b""

    def _record(self) -> RecordedRequest:
        request = RecordedRequest(
            method=self.command,
            path=self.path,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=self._read_body() if self.command == "POST" else b"",
        )
        self.server.owner._record(request)
        return request

    def do_POST(self) -> None:
        request = self._record()
        self.server.owner._answer(self, request)

    def do_GET(self) -> None:
        request = self._record()
        self.send_json(request, 404, _error_body("not_found_error", f"Not found: {self.path}"))

    do_HEAD = do_GET

    # --- writing answers -------------------------------------------------------------------------

    def send_json(
        self, request: RecordedRequest, status: int, body: Any, headers: dict[str, str] | None = None
    ) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("request-id", f"req_scripted_{id(request):x}")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        request.status = status

    def start_stream(self, request: RecordedRequest) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("request-id", f"req_scripted_{id(request):x}")
        self.send_header("connection", "close")
        self.end_headers()
        self.close_connection = True
        request.status = 200

    def event(self, name: str, data: dict[str, Any]) -> None:
        self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
        self.wfile.flush()

    def cut(self) -> None:
        """End the connection abruptly: no more bytes, no orderly end of the message."""
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def _error_body(error_type: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": error_type, "message": message}, "request_id": "req_scripted"}


class ScriptedServer:
    """The scripted Messages API. Use as ``with ScriptedServer() as api: api.script(...)``."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, validate: bool = True) -> None:
        self.host = host
        self.port = port
        self.validate = validate
        self.requests: list[RecordedRequest] = []
        self.unscripted: list[RecordedRequest] = []
        self.rejected: list[tuple[RecordedRequest, str]] = []
        self._steps: list[Step] = []
        self._lock = threading.Condition()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._connections: set[socket.socket] = set()
        self._stopping = threading.Event()
        self._message_counter = 0

    # --- lifecycle ----------------------------------------------------------------------------------

    def start(self) -> ScriptedServer:
        """Listen (again) — on the same port after a `stop`, so clients reconnect to the same URL."""
        with self._lock:
            if self._httpd is not None:
                return self
            deadline = time.monotonic() + 10
            while True:
                try:
                    httpd = _HTTPServer((self.host, self.port), self)
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)
            self.port = httpd.server_address[1]
            self._stopping = threading.Event()
            self._httpd = httpd
            self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop listening and cut every open connection (hanging requests included)."""
        with self._lock:
            httpd = self._httpd
            connections, self._connections = set(self._connections), set()
            self._stopping.set()
        if httpd is None:
            return
        httpd.shutdown()
        httpd.server_close()
        with self._lock:
            # Only now is the port closed: `running` turns false when a client would be refused.
            if self._httpd is httpd:
                self._httpd = None
            self._lock.notify_all()
        for conn in connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    @property
    def running(self) -> bool:
        return self._httpd is not None

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    # --- scripting -----------------------------------------------------------------------------------

    def script(self, *steps: Reply | Step | Callable[[RecordedRequest], Reply] | Iterable[Any]) -> ScriptedServer:
        """Queue steps, in order. A bare reply answers the next model request, whatever it is.

        With several agents talking to the server (workers, roles), key replies to their agent (`Step` with
        a `Match`, or `keyed`): a bare reply would go to whichever agent asks first.
        """
        flat: list[Step] = []
        for step in steps:
            if isinstance(step, (list, tuple)):
                flat.extend(s if isinstance(s, Step) else Step(s) for s in step)
            else:
                flat.append(step if isinstance(step, Step) else Step(step))  # type: ignore[arg-type]
        # A dispatched worker's script comes along with the call (keyed on its prompt, so its place in the
        # queue does not matter).
        flat = [s for step in flat for s in (step, *attached_steps(step.reply))]
        with self._lock:
            self._steps.extend(flat)
        return self

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._steps)

    def _take(self, request: RecordedRequest) -> Reply | None:
        with self._lock:
            for i, step in enumerate(self._steps):
                if step.accepts(request):
                    del self._steps[i]
                    reply = step.reply
                    break
            else:
                return None
        return reply(request) if callable(reply) else reply

    # --- recording -----------------------------------------------------------------------------------

    def _track(self, conn: socket.socket) -> None:
        with self._lock:
            self._connections.add(conn)

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)
            self._lock.notify_all()

    @property
    def message_requests(self) -> list[RecordedRequest]:
        """The model calls received (``POST /v1/messages``), in arrival order."""
        with self._lock:
            return [r for r in self.requests if r.is_messages]

    def wait_for(self, predicate: Callable[[ScriptedServer], bool], timeout: float = 30.0) -> None:
        """Block until ``predicate(self)`` holds (re-checked on every request), or fail after ``timeout``."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while not predicate(self):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"scripted server: condition not met within {timeout}s")
                self._lock.wait(min(remaining, 0.2))

    # --- answering -----------------------------------------------------------------------------------

    def _answer(self, handler: _Handler, request: RecordedRequest) -> None:
        path = request.path.split("?")[0].rstrip("/")
        body = request.json
        if path == "/v1/messages/count_tokens":
            handler.send_json(request, 200, {"input_tokens": _estimate_tokens(body)})
            return
        if path != "/v1/messages":
            handler.send_json(request, 404, _error_body("not_found_error", f"Not found: {path}"))
            return
        if not isinstance(body, dict):
            handler.send_json(request, 400, _error_body("invalid_request_error", "invalid JSON body"))
            return
        if self.validate:
            problem = validate_messages(body.get("messages") or [])
            if problem:
                with self._lock:
                    self.rejected.append((request, problem))
                handler.send_json(request, 400, _error_body("invalid_request_error", problem))
                return
        reply = self._take(request)
        if reply is None:
            with self._lock:
                self.unscripted.append(request)
            reply = Text(EXHAUSTED_TEXT)
        while isinstance(reply, After):
            try:
                self.wait_for(reply.condition, timeout=reply.timeout)
            except TimeoutError:
                with self._lock:
                    self.rejected.append((request, f"After: condition not met within {reply.timeout}s"))
                handler.send_json(request, 500, _error_body("api_error", "scripted server: After condition never held"))
                return
            reply = reply.reply
        if reply.delay and self._stopping.wait(reply.delay):
            handler.cut()
            return
        if isinstance(reply, ApiError):
            handler.send_json(request, reply.status, _error_body(reply.error_type, reply.message), reply.headers)
        elif isinstance(reply, Hang):
            self._stopping.wait(reply.seconds)
            handler.cut()
        elif isinstance(reply, Outage):
            self._go_down(reply.seconds)
        elif isinstance(reply, Drop):
            self._stream_dropped(handler, request, body, reply)
        elif isinstance(reply, Turn):
            # Recorded before answering: a test that waits for the request sees the usage the client will get.
            request.usage = self._usage(body, reply)
            if request.streaming:
                self._stream_turn(handler, request, body, reply)
            else:
                handler.send_json(request, 200, self._message_json(body, reply))
        else:  # pragma: no cover - a script error, surfaced loudly
            raise TypeError(f"unknown scripted reply: {reply!r}")

    def _go_down(self, seconds: float | None) -> None:
        # Stop listening BEFORE the client sees its connection cut: stop() closes the port, then cuts every
        # open connection, this request's included. Cutting first (as this once did, with the stop in another
        # thread) let a client that failed fast find the port still open — a probe right after the cut saw a
        # server that was meant to be down. A handler thread may call stop(): it is not the thread that runs
        # serve_forever (which shutdown() waits for), and handler threads are daemons that close() does not join.
        self.stop()
        if seconds is not None:

            def back_later() -> None:
                time.sleep(seconds)
                self.start()

            threading.Thread(target=back_later, daemon=True).start()

    def _next_message_id(self) -> str:
        with self._lock:
            self._message_counter += 1
            return f"msg_scripted{self._message_counter:06d}"

    @staticmethod
    def _usage(body: dict[str, Any], reply: Turn) -> dict[str, int]:
        u = reply.usage
        input_tokens = u.input_tokens
        if input_tokens is None:
            input_tokens = _estimate_tokens([body.get("system"), body.get("messages")])
        output_tokens = u.output_tokens
        if output_tokens is None:
            output_tokens = _estimate_tokens([b if isinstance(b, str) else b.input for b in reply.blocks])
        return {
            "input_tokens": input_tokens,
            "cache_creation_input_tokens": u.cache_creation_input_tokens,
            "cache_read_input_tokens": u.cache_read_input_tokens,
            "output_tokens": output_tokens,
        }

    def _message_json(self, body: dict[str, Any], reply: Turn) -> dict[str, Any]:
        content = [
            {"type": "text", "text": b}
            if isinstance(b, str)
            else {"type": "tool_use", "id": b.id, "name": b.name, "input": b.input}
            for b in reply.blocks
        ]
        return {
            "id": self._next_message_id(),
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "claude-scripted"),
            "content": content,
            "stop_reason": reply.final_stop_reason(),
            "stop_sequence": None,
            "usage": self._usage(body, reply),
        }

    def _message_start(self, handler: _Handler, body: dict[str, Any], usage: dict[str, int]) -> None:
        handler.event(
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": self._next_message_id(),
                    "type": "message",
                    "role": "assistant",
                    "model": body.get("model", "claude-scripted"),
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {**usage, "output_tokens": 1},
                },
            },
        )

    def _stream_turn(self, handler: _Handler, request: RecordedRequest, body: dict[str, Any], reply: Turn) -> None:
        usage = self._usage(body, reply)
        handler.start_stream(request)
        try:
            self._message_start(handler, body, usage)
            for index, block in enumerate(reply.blocks):
                if isinstance(block, str):
                    handler.event(
                        "content_block_start",
                        {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}},
                    )
                    for chunk in _chunks(block, 2000):
                        handler.event(
                            "content_block_delta",
                            {
                                "type": "content_block_delta",
                                "index": index,
                                "delta": {"type": "text_delta", "text": chunk},
                            },
                        )
                else:
                    handler.event(
                        "content_block_start",
                        {
                            "type": "content_block_start",
                            "index": index,
                            "content_block": {"type": "tool_use", "id": block.id, "name": block.name, "input": {}},
                        },
                    )
                    for chunk in _chunks(json.dumps(block.input), 2000):
                        handler.event(
                            "content_block_delta",
                            {
                                "type": "content_block_delta",
                                "index": index,
                                "delta": {"type": "input_json_delta", "partial_json": chunk},
                            },
                        )
                handler.event("content_block_stop", {"type": "content_block_stop", "index": index})
            handler.event(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": reply.final_stop_reason(), "stop_sequence": None},
                    "usage": {"output_tokens": usage["output_tokens"]},
                },
            )
            handler.event("message_stop", {"type": "message_stop"})
        except OSError:
            pass  # the client went away mid-answer; nothing to clean up on our side

    def _stream_dropped(self, handler: _Handler, request: RecordedRequest, body: dict[str, Any], reply: Drop) -> None:
        handler.start_stream(request)
        try:
            self._message_start(handler, body, self._usage(body, Text(reply.partial)))
            handler.event(
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            )
            handler.event(
                "content_block_delta",
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": reply.partial}},
            )
        except OSError:
            pass
        handler.cut()


def _chunks(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]
