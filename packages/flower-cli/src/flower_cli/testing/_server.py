"""A scripted Anthropic Messages API on 127.0.0.1, for driving the real Claude Code binary offline.

The server runs in its own threads, so it keeps answering while a test's event loop is busy. Each
``POST /v1/messages`` takes the first queued step that accepts it; the reply is streamed as SSE the way the
real API does (``message_start`` … ``message_stop`` with usage). Before a step is taken the request is
checked the way the real API checks it (every ``tool_use`` answered, no empty text): a broken request gets
the API's 400 and consumes nothing. Every request is recorded.

The server can go away and come back on the same port (`stop` / `start`, or an `Outage` step), which is how
a test produces a dropped network without touching the machine's network.
"""

from __future__ import annotations

import json
import math
import socket
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ._recorded import RecordedRequest
from ._replies import ApiError, Drop, Hang, Outage, Reply, ScriptStep, Text, Turn, UsageLimited
from ._validation import validate_messages
from ._wire import Event, dropped_events, error_body, estimate_tokens, message_json, turn_events, usage_of

__all__ = ["EXHAUSTED_TEXT", "After", "ScriptItem", "ScriptedServer", "seen"]

EXHAUSTED_TEXT = "(scripted server: no step left for this request)"

# What `ScriptedServer.script` queues: a reply (answers the next request), a keyed step, or a function of the
# request that makes the reply when the step is taken.
ScriptItem = Reply | ScriptStep | Callable[[RecordedRequest], Reply]


@dataclass
class After(Reply):
    """Answer with ``reply`` once ``condition(server)`` holds; fail the request after ``timeout`` seconds.

    For ordering parallel agents without sleeping: a worker's last reply ``After(seen(when_prompt(B)))``
    proves worker B was running at the same time.
    """

    condition: Callable[[ScriptedServer], bool]
    reply: Reply
    timeout: float = 120.0


def seen(match: Callable[[RecordedRequest], bool], count: int = 1) -> Callable[[ScriptedServer], bool]:
    """A server condition for `After`: at least ``count`` requests matching ``match`` have arrived."""

    def condition(server: ScriptedServer) -> bool:
        return sum(1 for r in server.message_requests if match(r)) >= count

    return condition


def _attached_steps(reply: Reply | Callable[[RecordedRequest], Reply]) -> list[ScriptStep]:
    """The worker scripts a reply carries (its `dispatch` calls, nested dispatches included), to queue with it."""
    if isinstance(reply, After):
        return _attached_steps(reply.reply)
    if not isinstance(reply, Turn):
        return []
    out: list[ScriptStep] = []
    for call in reply.tool_calls:
        for step in call.script:
            out.append(step)
            out.extend(_attached_steps(step.reply))
    return out


@dataclass(frozen=True)
class _Window:
    """A usage-limit window (`UsageLimited`): until ``ends`` (Unix time) the requests ``key`` accepts are refused —
    every request when the step that opened it was not keyed, else only its agent's (one account's limit)."""

    ends: float
    claim: str
    key: Callable[[RecordedRequest], bool] | None


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

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib method's signature
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
        self.send_json(request, 404, error_body("not_found_error", f"Not found: {self.path}"))

    do_HEAD = do_GET  # noqa: N815 - the stdlib handler's method name

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

    def events(self, events: Iterable[Event]) -> None:
        """Write SSE events, each flushed as it is made; a client gone mid-answer leaves nothing to clean up."""
        try:
            for name, data in events:
                self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
                self.wfile.flush()
        except OSError:
            pass

    def cut(self) -> None:
        """End the connection abruptly: no more bytes, no orderly end of the message."""
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


class ScriptedServer:
    """The scripted Messages API. Use as ``with ScriptedServer() as api: api.script(...)``.

    ``requests`` holds every request received, ``message_requests`` the model calls among them;
    ``unscripted`` the model calls no step accepted (answered with `EXHAUSTED_TEXT`), ``rejected`` the
    malformed ones with the API's reason (answered 400; ``validate=False`` accepts them all);
    ``limited`` the model calls refused inside a usage-limit window (`UsageLimited`), ``limit_ends`` (Unix
    time) when the latest window ends.
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, validate: bool = True) -> None:
        self.host = host
        self.port = port
        self.validate = validate
        self.requests: list[RecordedRequest] = []
        self.unscripted: list[RecordedRequest] = []
        self.rejected: list[tuple[RecordedRequest, str]] = []
        self._steps: list[ScriptStep] = []
        self._lock = threading.Condition()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._connections: set[socket.socket] = set()
        self._stopping = threading.Event()
        self._message_counter = 0
        self.limited: list[RecordedRequest] = []
        self.limit_ends: float | None = None  # the reset of the latest window opened
        self._windows: list[_Window] = []

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

    def script(self, *steps: ScriptItem | Sequence[ScriptItem]) -> ScriptedServer:
        """Queue steps, in order. A bare reply answers the next model request, whatever it is.

        With several agents talking to the server (workers, roles), key replies to their agent (`ScriptStep`
        with a `Match`, or `keyed`): a bare reply would go to whichever agent asks first. A list (what `keyed`
        returns) is queued in its order.
        """
        items: list[ScriptItem] = []
        for step in steps:
            if isinstance(step, Sequence):
                items.extend(step)
            else:
                items.append(step)
        flat = [item if isinstance(item, ScriptStep) else ScriptStep(item) for item in items]
        # A dispatched worker's script comes along with the call (keyed on its prompt, so its place in the
        # queue does not matter).
        flat = [s for step in flat for s in (step, *_attached_steps(step.reply))]
        with self._lock:
            self._steps.extend(flat)
        return self

    @property
    def pending(self) -> int:
        """How many queued steps no request has taken yet."""
        with self._lock:
            return len(self._steps)

    def _take(self, request: RecordedRequest) -> tuple[Reply | None, Callable[[RecordedRequest], bool] | None]:
        """The reply of the first queued step that accepts ``request``, and that step's key (its ``when``)."""
        with self._lock:
            for i, step in enumerate(self._steps):
                if step.accepts(request):
                    del self._steps[i]
                    reply = step.reply
                    break
            else:
                return None, None
        return (reply if isinstance(reply, Reply) else reply(request)), step.when

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
            handler.send_json(request, 200, {"input_tokens": estimate_tokens(body)})
            return
        if path != "/v1/messages":
            handler.send_json(request, 404, error_body("not_found_error", f"Not found: {path}"))
            return
        if not isinstance(body, dict):
            handler.send_json(request, 400, error_body("invalid_request_error", "invalid JSON body"))
            return
        if self.validate:
            problem = validate_messages(body.get("messages") or [])
            if problem:
                with self._lock:
                    self.rejected.append((request, problem))
                handler.send_json(request, 400, error_body("invalid_request_error", problem))
                return
        if self._refuse_in_window(handler, request):
            return
        reply, key = self._take(request)
        if isinstance(reply, UsageLimited):
            with self._lock:
                # A whole second: the reset header is one, and the harness must not be told a reset before the end.
                window = _Window(math.ceil(time.time() + reply.seconds), reply.claim, key)
                self._windows.append(window)
                self.limit_ends = window.ends
            self._refuse_in_window(handler, request)
            return
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
                handler.send_json(request, 500, error_body("api_error", "scripted server: After condition never held"))
                return
            reply = reply.reply
        if reply.delay and self._stopping.wait(reply.delay):
            handler.cut()
            return
        if isinstance(reply, ApiError):
            handler.send_json(request, reply.status, error_body(reply.error_type, reply.message), reply.headers)
        elif isinstance(reply, Hang):
            self._stopping.wait(reply.seconds)
            handler.cut()
        elif isinstance(reply, Outage):
            self._go_down(reply.seconds)
        elif isinstance(reply, Drop):
            handler.start_stream(request)
            handler.events(dropped_events(body, reply.partial, self._next_message_id()))
            handler.cut()
        elif isinstance(reply, Turn):
            # Recorded before answering: a test that waits for the request sees the usage the client will get.
            request.usage = usage_of(body, reply)
            if request.streaming:
                handler.start_stream(request)
                handler.events(turn_events(body, reply, self._next_message_id()))
            else:
                handler.send_json(request, 200, message_json(body, reply, self._next_message_id()))
        else:  # a script error, surfaced loudly
            raise TypeError(f"unknown scripted reply: {reply!r}")

    def lift_limits(self) -> None:
        """End every usage-limit window now: the reset came (for a test that cannot wait hours for it)."""
        with self._lock:
            now = time.time()
            self._windows = [_Window(min(w.ends, now), w.claim, w.key) for w in self._windows]

    def _refuse_in_window(self, handler: _Handler, request: RecordedRequest) -> bool:
        """Inside a usage-limit window: answer 429 with the unified rate-limit headers (True), as the API does."""
        with self._lock:
            now = time.time()
            window = next((w for w in self._windows if now < w.ends and (w.key is None or w.key(request))), None)
            if window is None:
                return False
            self.limited.append(request)
            ends, claim = window.ends, window.claim
        span = "7d" if claim.startswith("seven_day") else "5h"
        headers = {
            "anthropic-ratelimit-unified-status": "rejected",
            "anthropic-ratelimit-unified-reset": str(int(ends)),
            f"anthropic-ratelimit-unified-{span}-reset": str(int(ends)),
            f"anthropic-ratelimit-unified-{span}-status": "rejected",
            "anthropic-ratelimit-unified-representative-claim": claim,
        }
        message = "This request would exceed your account's rate limit. Please try again later."
        handler.send_json(request, 429, error_body("rate_limit_error", message), headers)
        return True

    def _go_down(self, seconds: float | None) -> None:
        # Stop listening BEFORE the client sees its connection cut: stop() closes the port, then cuts every
        # open connection, this request's included. Cutting first (as this once did, with the stop in another
        # thread) let a client that failed fast find the port still open — a probe right after the cut saw a
        # server that was meant to be down. A handler thread may call stop(): it is not the thread that runs
        # serve_forever (which shutdown() waits for), and handler threads are daemons that close() does not join.
        self.stop()
        if seconds is not None:
            wait = seconds

            def back_later() -> None:
                time.sleep(wait)
                self.start()

            threading.Thread(target=back_later, daemon=True).start()

    def _next_message_id(self) -> str:
        with self._lock:
            self._message_counter += 1
            return f"msg_scripted{self._message_counter:06d}"
