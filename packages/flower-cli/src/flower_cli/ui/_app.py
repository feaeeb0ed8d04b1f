"""The page's web application (Starlette): the static page, the runs as JSON and as a live stream, one run's
events as a live stream, and the three verbs — all behind the token (`TokenGate`)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ._runs import all_runs, runs_changes
from ._sources import RunSource, SourceError
from ._sse import SseResponse, sse_message
from ._token import TOKEN_COOKIE, TokenGate

__all__ = ["STATIC_DIR", "create_app"]

STATIC_DIR = Path(__file__).parent / "static"
# The page runs only its own script and talks only to its own server: even text that reached the DOM as HTML
# by a mistake could not run a script or send anything elsewhere.
_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
_SECURITY_HEADERS = {
    "Content-Security-Policy": _CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",  # the URL holds the token
    "Cache-Control": "no-store",
}
_MAX_TEXT = 20_000  # an answer or a mail longer than this is a paste gone wrong


class _Routes:
    def __init__(self, sources: Sequence[RunSource], token: str, closing: Callable[[], bool] | None) -> None:
        self.sources = {source.name: source for source in sources}
        self.token = token
        self.closing = closing

    def source(self, request: Request) -> RunSource:
        name = request.path_params["source"]
        source = self.sources.get(name)
        if source is None:
            raise SourceError(f"no runs come from {name!r} here (known: {', '.join(self.sources) or 'none'})", 404)
        return source

    async def page(self, request: Request) -> Response:
        response = FileResponse(STATIC_DIR / "index.html", headers=_SECURITY_HEADERS)
        # The cookie lets a reload of the page (whose URL may have lost ?token=) and its stream in.
        response.set_cookie(TOKEN_COOKIE, self.token, httponly=True, samesite="strict")
        return response

    async def runs(self, request: Request) -> Response:
        return JSONResponse(await all_runs(list(self.sources.values())), headers=_SECURITY_HEADERS)

    async def runs_stream(self, request: Request) -> Response:
        sources = list(self.sources.values())

        async def messages() -> AsyncIterator[bytes]:
            async for listing in runs_changes(sources):
                yield sse_message(listing, event="runs")

        return _as_response(SseResponse(messages, closing=self.closing))

    async def events(self, request: Request) -> Response:
        source, run_id = self.source(request), request.path_params["run_id"]
        after = _after(request)

        async def messages() -> AsyncIterator[bytes]:
            try:
                async for item in source.events(run_id, after):
                    yield sse_message(item, event="run-event", event_id=int(item.get("seq", 0)))
            except SourceError as exc:  # the stream is open already: the page is told in the stream itself
                yield sse_message({"error": exc.message, "status": exc.status}, event="run-error")

        return _as_response(SseResponse(messages, closing=self.closing))

    async def verb(self, request: Request) -> Response:
        source, run_id, verb = self.source(request), request.path_params["run_id"], request.path_params["verb"]
        text = "" if verb == "stop" else await _text(request)
        if verb == "answer":
            said = await source.answer(run_id, text)
        elif verb == "mail":
            said = await source.mail(run_id, text)
        elif verb == "stop":
            said = await source.stop(run_id)
        else:
            raise SourceError(f"unknown action {verb!r}: answer, mail or stop", 404)
        return JSONResponse({"ok": True, "said": said}, headers=_SECURITY_HEADERS)


def _as_response(stream: SseResponse) -> Response:
    """Starlette's endpoints return a Response; the stream is a plain ASGI app, which Starlette also accepts."""
    return stream  # type: ignore[return-value]


def _after(request: Request) -> int:
    """Where to read on from: the browser's ``Last-Event-ID`` on a reconnect, else ``?after=``, else 0."""
    given = request.headers.get("last-event-id") or request.query_params.get("after") or "0"
    try:
        return max(0, int(given))
    except ValueError:
        raise SourceError(f"after must be an event number, not {given[:40]!r}") from None


async def _text(request: Request) -> str:
    try:
        body: Any = await request.json()
    except ValueError:
        raise SourceError('send JSON: {"text": "..."}') from None
    text = body.get("text") if isinstance(body, dict) else None
    if not isinstance(text, str) or not text.strip():
        raise SourceError("the text is empty: write what to send")
    if len(text) > _MAX_TEXT:
        raise SourceError(f"the text is {len(text)} characters; at most {_MAX_TEXT} go to a run")
    return text


async def _source_error(request: Request, exc: Exception) -> Response:
    status, message = (exc.status, exc.message) if isinstance(exc, SourceError) else (500, str(exc))
    return JSONResponse({"ok": False, "error": message}, status_code=status, headers=_SECURITY_HEADERS)


def create_app(sources: Sequence[RunSource], token: str, closing: Callable[[], bool] | None = None) -> TokenGate:
    """The page's ASGI application over ``sources``, refusing (401) every request without ``token``; its live
    streams end once ``closing()`` says the server is stopping."""
    routes = _Routes(sources, token, closing)
    app = Starlette(
        routes=[
            Route("/", routes.page, methods=["GET"]),
            Route("/api/runs", routes.runs, methods=["GET"]),
            Route("/api/runs/stream", routes.runs_stream, methods=["GET"]),
            Route("/api/runs/{source}/{run_id}/events", routes.events, methods=["GET"]),
            Route("/api/runs/{source}/{run_id}/{verb}", routes.verb, methods=["POST"]),
            Mount("/static", StaticFiles(directory=STATIC_DIR), name="static"),
        ],
        exception_handlers={SourceError: _source_error},
    )
    return TokenGate(app, token)
