"""``flower analyze [RUN_DIR] | --store URL --run ID``: where a run's context, work and money went, read-only."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .._help import FlowerCommand, epilog
from .._root_app import app

__all__ = ["analyze"]


@app.command(
    cls=FlowerCommand,
    epilog=epilog(
        "flower analyze --html run.html   # and open run.html in a browser",
        "flower analyze --store postgresql://flower@db/flower --run nightly-42   # a fleet run, from any machine",
    ),
)
def analyze(
    ctx: typer.Context,
    run_dir: Annotated[
        Path | None,
        typer.Argument(
            help="A run dir (or a workspace holding runs/) [default: this workspace's run dir].",
            metavar="RUN_DIR",
            show_default=False,
        ),
    ] = None,
    html: Annotated[
        Path | None,
        typer.Option(
            "--html", metavar="PATH", help="Also write one self-contained HTML page with the charts to this file."
        ),
    ] = None,
    wide: Annotated[
        bool, typer.Option("--wide", help="Every column, one line per row (the default fits 100 columns).")
    ] = False,
    run: Annotated[
        str | None,
        typer.Option(
            "--run",
            metavar="ID",
            help="Read run ID's records (steps, lineage) and sessions from the --store instead of a run dir.",
        ),
    ] = None,
) -> None:
    """Where a run's context, work and money went: per step and per session, read-only (--json for programs)."""
    from ..actions.analyze import run_analyze  # why: it loads the analyze room and the stores; `--help` must not

    run_analyze(ctx.obj, run_dir, html, wide=wide, run=run)
