"""The page's access token (as Jupyter's): made once per ``flower ui``, printed in the URL, asked of every request.

Why a gate in front of everything, the live stream included: the page answers a run's questions and stops runs,
and a port on 127.0.0.1 is reachable by every local user and by any web page the person's browser opens (a page
can make the browser send requests to loopback). Only someone who was shown the URL holds the token.
"""

from __future__ import annotations

import hmac
import json
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qs

__all__ = ["TOKEN_COOKIE", "TOKEN_HEADER", "TokenGate", "new_token"]

TOKEN_COOKIE = "flower_ui_token"
# A request that changes something (answer, mail, stop) must carry the token in this header: a cookie alone
# would be sent by the browser along with a forged form posted from another site.
TOKEN_HEADER = "x-flower-token"

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
Asgi = Callable[[Scope, Receive, Send], Awaitable[None]]


def new_token() -> str:
    """A fresh random token (192 bits, URL-safe)."""
    return secrets.token_urlsafe(24)


class TokenGate:
    """ASGI middleware: a request without the token gets 401 and nothing else.

    The token is read from the ``token`` query parameter (the printed URL; the live stream, which a browser's
    EventSource cannot give headers), the `TOKEN_HEADER` header, or the cookie the page receives with its first
    load. Requests other than GET/HEAD accept only the query or the header (see `TOKEN_HEADER`).
    """

    def __init__(self, app: Asgi, token: str) -> None:
        if not token:
            raise ValueError("the page's token must not be empty")
        self.app = app
        self._token = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if not self._allowed(scope):
            await _refuse(send)
            return
        await self.app(scope, receive, send)

    def _allowed(self, scope: Scope) -> bool:
        reading = scope.get("method", "GET") in ("GET", "HEAD")
        return any(self._matches(given) for given in _offered(scope, with_cookie=reading))

    def _matches(self, given: str) -> bool:
        return hmac.compare_digest(given.encode(), self._token)


def _offered(scope: Scope, *, with_cookie: bool) -> list[str]:
    """Every token the request offers (query, header, and the cookie when ``with_cookie``)."""
    offered = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("token", [])
    for name, value in scope.get("headers", []):
        if name == TOKEN_HEADER.encode():
            offered.append(value.decode("latin-1"))
        elif name == b"cookie" and with_cookie:
            jar: SimpleCookie = SimpleCookie()
            try:
                jar.load(value.decode("latin-1"))
            except Exception:  # noqa: BLE001 - a malformed cookie header offers no token; it is not our error
                continue
            if TOKEN_COOKIE in jar:
                offered.append(jar[TOKEN_COOKIE].value)
    return offered


async def _refuse(send: Send) -> None:
    body = json.dumps({"error": "this page needs its token: open the URL `flower ui` printed"}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 401,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})
