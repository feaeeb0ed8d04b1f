"""``flower demo``: a whole ``flower go`` against a scripted model, free and offline, in under a minute."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .._help import FlowerCommand, epilog
from .._root_app import app

__all__ = ["demo"]


@app.command(cls=FlowerCommand, epilog=epilog("flower demo", "flower demo --dir /tmp/flower-demo   # keep it there"))
def demo(
    ctx: typer.Context,
    folder: Annotated[
        Path | None,
        typer.Option(
            "--dir",
            metavar="PATH",
            help="Play in this folder (created; it must be empty) [default: a new temporary folder, kept].",
        ),
    ] = None,
) -> None:
    """See flower work, free: clarify, goal, workers, a judge, a stop and a resume, against a scripted model."""
    from ..actions.demo import run_demo  # why: it loads the scripted server and the go room; `--help` must not

    run_demo(ctx.obj, folder)
