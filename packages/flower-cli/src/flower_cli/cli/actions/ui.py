"""``flower ui``: serve the live page of the runs until Ctrl-C; its URL (with the token) is the result, on stdout."""

from __future__ import annotations

import json
import sys
from importlib.util import find_spec
from typing import TYPE_CHECKING, Any

import anyio

from ..._shared.exits import Exit, ExitCode
from ...control import Control
from ...ui import (
    Closing,
    ControlSource,
    SourceOptions,
    installed_sources,
    is_loopback,
    listen,
    new_token,
    page_url,
    serve,
)
from .output import write_stdout
from .store import open_store

if TYPE_CHECKING:
    from ...ui import RunSource
    from .._global_options import GlobalOptions

__all__ = ["UI_EXTRA_HINT", "run_ui"]

UI_EXTRA_HINT = (
    "`flower ui` needs the ui extra (starlette, uvicorn), which is not installed: pip install 'flower-cli[ui]'"
)


def _extra_installed() -> bool:
    return all(find_spec(name) is not None for name in ("starlette", "uvicorn"))


def _sources(opts: GlobalOptions, store: Any) -> list[RunSource]:
    """This workspace's runs (or the --store's), then the ones installed distributions add (the fleet's)."""
    options = SourceOptions(workspace=opts.workspace, run_dir=opts.run_dir, store=opts.store)
    return [ControlSource(Control(store)), *installed_sources(options)]


def _open(opts: GlobalOptions) -> Any:
    """The store the runs publish to; a run dir nothing has run in yet gets its (empty) store now, so the runs
    started after the page show up on it."""
    if not opts.store:
        opts.run_dir.mkdir(parents=True, exist_ok=True)
    return open_store(opts)


def run_ui(opts: GlobalOptions, *, host: str, port: int) -> None:
    if not _extra_installed():
        raise Exit(ExitCode.CONFIG, UI_EXTRA_HINT)
    if not 0 <= port <= 65535:
        raise Exit(ExitCode.USAGE, f"--port {port} is not a port: give 1-65535, or leave it out for a free one")
    from ...ui import create_app  # why: it imports starlette, the optional extra checked just above

    try:
        sock = listen(host, port)
    except OSError as exc:
        raise Exit(
            ExitCode.CONFIG,
            f"cannot listen on {host}:{port} ({exc.strerror or exc}): pick another --port, or leave it out for a free one",
        ) from None
    token = new_token()
    store = _open(opts)
    closing = Closing()
    app = create_app(_sources(opts, store), token, closing)
    url = page_url(sock, token)

    def ready() -> None:
        if not is_loopback(host):
            sys.stderr.write(
                f"flower ui: listening on {host}: whoever reaches it and holds the token can answer and stop runs\n"
            )
        sys.stderr.write("flower ui: open the URL below in a browser; Ctrl-C stops the page (the runs go on)\n")
        line = json.dumps({"kind": "ui", "url": url}) if opts.json else url
        write_stdout(line + "\n")

    with sock, store:
        anyio.run(serve, app, sock, ready, closing, backend="asyncio")
