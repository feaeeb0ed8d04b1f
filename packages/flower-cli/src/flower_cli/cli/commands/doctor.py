"""``flower doctor``: every setting and where it came from, the endpoint, the credential, the store."""

from __future__ import annotations

from typing import Annotated

import typer

from .._help import FlowerCommand, epilog
from .._root_app import app

__all__ = ["doctor"]


@app.command(cls=FlowerCommand, epilog=epilog("flower doctor --no-probe   # everything but the paid credential probe"))
def doctor(
    ctx: typer.Context,
    no_probe: Annotated[
        bool, typer.Option("--no-probe", help="Skip the live credential probe (one tiny paid request).")
    ] = False,
) -> None:
    """Check settings (and where each came from), the endpoint, the credential and the store."""
    from ..actions.doctor import run_doctor  # why: it loads the sibling libraries; `--help` must not

    run_doctor(ctx.obj, probe=not no_probe)
