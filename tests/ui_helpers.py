"""The live page's test rig: a `MemorySource` (runs and events the test writes, verbs it records) and `PageServer`,
the real application served by uvicorn on a loopback port in a thread of the test process.

The source stands in for a kind of run at the seam the page reads through (`flower_cli.ui.RunSource`); the tests
of the page over real runs go through the local source instead.
"""

from __future__ import annotations

import asyncio
import threading
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from flower_cli import Control, RunPublisher
from flower_cli.ui import ControlSource, RunSource, SourceError, create_app, listen, new_token
from flower_stores import InboxMessage, SqliteSessionStore

__all__ = ["MemorySource", "PageServer", "http", "store_source"]


@dataclass
class MemorySource:
    """Runs and their events held in memory; ``said`` records each verb the page sent (verb, run id, text)."""

    name: str = "mem"
    runs: list[dict[str, Any]] = field(default_factory=list)
    log: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    said: list[tuple[str, str, str]] = field(default_factory=list)
    refuse: SourceError | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def publish(self, run_id: str, event: dict[str, Any]) -> int:
        """Append ``event`` to ``run_id``'s log (from any thread); its seq."""
        with self._lock:
            events = self.log.setdefault(run_id, [])
            events.append({"seq": len(events) + 1, "at_ms": int(time.time() * 1000), "event": event})
            return len(events)

    async def list_runs(self) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(run) for run in self.runs]

    async def events(self, run_id: str, after: int = 0) -> AsyncIterator[dict[str, Any]]:
        if run_id not in self.log and not any(run["id"] == run_id for run in self.runs):
            raise SourceError(f"no run {run_id}", 404)
        seen = after
        while True:
            with self._lock:
                batch = list(self.log.get(run_id, [])[seen:])
            for item in batch:
                seen = item["seq"]
                yield item
            if not batch:
                await anyio.sleep(0.02)  # a memory read: polled often, the page's latency is what is measured

    async def _verb(self, verb: str, run_id: str, text: str) -> str:
        if self.refuse is not None:
            raise self.refuse
        self.said.append((verb, run_id, text))
        return f"{verb} sent to {run_id}"

    async def answer(self, run_id: str, text: str) -> str:
        return await self._verb("answer", run_id, text)

    async def mail(self, run_id: str, text: str) -> str:
        return await self._verb("mail", run_id, text)

    async def stop(self, run_id: str) -> str:
        return await self._verb("stop", run_id, "")


class PageServer:
    """The page's real application over ``sources`` on 127.0.0.1 (a free port), served by uvicorn in a thread."""

    def __init__(self, sources: Sequence[RunSource], token: str | None = None) -> None:
        import uvicorn  # why: the ui extra; a module importing this file may run without it

        self.token = token or new_token()
        self.sock = listen("127.0.0.1", 0)
        host, port = self.sock.getsockname()[:2]
        self.base = f"http://{host}:{port}"
        config = uvicorn.Config(create_app(sources, self.token), log_level="warning", lifespan="off")
        config.timeout_graceful_shutdown = 1
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=lambda: asyncio.run(self.server.serve(sockets=[self.sock])), daemon=True)

    @property
    def url(self) -> str:
        return f"{self.base}/?token={self.token}"

    def __enter__(self) -> PageServer:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert self.thread.is_alive() and time.monotonic() < deadline, "the page's server did not start"
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)
        self.sock.close()


def http(
    url: str, *, method: str = "GET", body: bytes | None = None, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    """(status, headers, body) of one request; an error status is returned, not raised."""
    request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def store_source(
    where: Path, run_id: str, taken: list[InboxMessage] | None = None
) -> tuple[ControlSource, Callable[[dict[str, Any]], None]]:
    """The page's local source over a SQLite store in ``where``, and ``publish(event)``: a `RunPublisher` (as a
    running run has) writing ``run_id``'s events into the same file through its own connection. Messages the
    run is sent are taken and appended to ``taken``. Both live until the process ends (test and benchmark)."""
    db = where / "sessions.db"
    publisher = RunPublisher(
        SqliteSessionStore(db),
        run_id,
        meta={"command": "go", "workspace": str(where), "accepts": ["answer", "mail", "stop"]},
        handle=lambda message: (taken.append(message) if taken is not None else None, (True, f"took {message.kind}"))[
            1
        ],
        inbox_s=0.1,
    ).start()
    return ControlSource(Control(SqliteSessionStore(db))), publisher.publish
