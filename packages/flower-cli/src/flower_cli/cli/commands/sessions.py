"""``flower sessions [show SESSION_ID | import SESSION_ID]``: what the store holds for this workspace, and filling
a session's gaps in it from the harness's local transcript."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .._help import FlowerCommand, FlowerGroup, epilog
from .._root_app import app

__all__ = ["sessions_app", "sessions_import", "sessions_list", "sessions_show"]

sessions_app = typer.Typer(
    help="List, show, import, delete or prune the sessions of this workspace; compact the store.",
    rich_markup_mode=None,
    cls=FlowerGroup,
    epilog=epilog("flower sessions show 1a2b3c4d   # any unique prefix of a session id"),
)
app.add_typer(sessions_app, name="sessions")


@sessions_app.callback(invoke_without_command=True)
def sessions_list(
    ctx: typer.Context,
    every_path: Annotated[
        bool,
        typer.Option("--all", help="List the sessions of every path the store holds (a moved project's old path)."),
    ] = False,
) -> None:
    """List this workspace's sessions (newest first)."""
    if ctx.invoked_subcommand is None:
        from ..actions.sessions import list_sessions  # why: it loads the stores; `--help` must not

        list_sessions(ctx.obj, every_path=every_path)


@sessions_app.command(
    "show", cls=FlowerCommand, epilog=epilog("flower sessions show 1a2b3c4d   # any unique prefix of a session id")
)
def sessions_show(
    ctx: typer.Context,
    session_id: Annotated[
        str,
        typer.Argument(help="A session id from `flower sessions`, or any unique prefix of one.", metavar="SESSION_ID"),
    ],
) -> None:
    """Show one session's conversation, one line per message."""
    from ..actions.sessions import show_session  # why: it loads the stores; `--help` must not

    show_session(ctx.obj, session_id)


@sessions_app.command(
    "import",
    cls=FlowerCommand,
    epilog=epilog("flower sessions import 1a2b3c4d-… --from ~/.claude/projects/<key>/1a2b3c4d-….jsonl"),
)
def sessions_import(
    ctx: typer.Context,
    session_id: Annotated[
        str,
        typer.Argument(help="The full id of the session whose transcript the store lacks.", metavar="SESSION_ID"),
    ],
    source: Annotated[
        Path | None,
        typer.Option(
            "--from",
            help="The session's local transcript (<session id>.jsonl) [default: the harness's copy under "
            "~/.claude/projects, else <run dir>/unstored].",
            metavar="PATH",
        ),
    ] = None,
) -> None:
    """Add to the store what the session's local transcript holds and the store lacks (idempotent)."""
    from ..actions.sessions import import_session  # why: it loads the stores and the SDK; `--help` must not

    import_session(ctx.obj, session_id, source)
