"""Serving the page: a listening socket (127.0.0.1 and a free port unless told), its URL with the token, and
uvicorn serving the application on it until Ctrl-C.

Why the socket is bound here and handed to uvicorn: the URL (with the port the system chose) must be printed
before the first request, and a port picked first and bound later could be taken in between.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from typing import Any

__all__ = ["Closing", "UiAddress", "is_loopback", "listen", "page_url", "serve"]

UiAddress = tuple[str, int]


def is_loopback(host: str) -> bool:
    """Whether ``host`` is reachable from this machine only (127.0.0.0/8, ::1, localhost)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def listen(host: str = "127.0.0.1", port: int = 0) -> socket.socket:
    """A listening TCP socket on ``host``:``port`` (0: a free port the system picks). OSError when it cannot."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
        sock.set_inheritable(True)
    except OSError:
        sock.close()
        raise
    return sock


def page_url(sock: socket.socket, token: str) -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    if host in ("0.0.0.0", "::"):
        shown = socket.gethostname()  # every interface: the machine's name is what another machine types
    return f"http://{shown}:{port}/?token={token}"


class Closing:
    """Set when the server starts to stop: the page's live streams end then (see `SseResponse`)."""

    def __init__(self) -> None:
        self.stopping = False

    def __call__(self) -> bool:
        return self.stopping


async def serve(
    app: Any, sock: socket.socket, on_ready: Callable[[], None] | None = None, closing: Closing | None = None
) -> None:
    """Serve ``app`` on ``sock`` until the process is interrupted (uvicorn handles SIGINT/SIGTERM); ``closing`` is
    set as the shutdown begins, before uvicorn waits for the open connections."""
    import uvicorn  # why: the optional extra; `flower ui` checks it is installed before it gets here

    class Server(uvicorn.Server):
        async def shutdown(self, sockets: Any = None) -> None:
            if closing is not None:
                closing.stopping = True
            await super().shutdown(sockets=sockets)

    config = uvicorn.Config(
        app,
        log_level="warning",
        lifespan="off",
        access_log=False,
        # The live streams end within a fifth of a second of `closing`; a slower request is cut after two.
        timeout_graceful_shutdown=2,
        server_header=False,
    )
    server = Server(config)
    if on_ready is not None:
        on_ready()
    await server.serve(sockets=[sock])
