"""``flower ui [--host HOST] [--port N]``: the live page of the runs, on 127.0.0.1 behind a random token."""

from __future__ import annotations

from typing import Annotated

import typer

from .._help import FlowerCommand, epilog
from .._root_app import app

__all__ = ["ui"]


@app.command(
    cls=FlowerCommand,
    epilog=epilog(
        "flower ui   # then open the printed http://127.0.0.1:PORT/?token=… in a browser",
        "flower --store postgresql://flower@db/flower ui --port 8765   # the runs of a shared store",
    ),
)
def ui(
    ctx: typer.Context,
    host: Annotated[
        str,
        typer.Option(
            "--host",
            metavar="HOST",
            help="Listen on this address (0.0.0.0: every interface); the token is asked all the same.",
        ),
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", metavar="N", help="Listen on this port [default: a free one].")] = 0,
) -> None:
    """A live page of this workspace's runs (and the fleet's with FLOWER_TEMPORAL): answer, mail, stop. Needs
    the ui extra: pip install 'flower-cli[ui]'."""
    from ..actions.ui import run_ui  # why: it loads the web server and the stores; `--help` must not

    run_ui(ctx.obj, host=host, port=port)
