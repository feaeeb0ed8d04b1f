"""``flower sessions delete ID… | prune --older-than AGE | compact [--full]``: the store's upkeep (each with
``--dry-run`` and ``--force``; the global ``--json`` prints one document)."""

from __future__ import annotations

from typing import Annotated

import typer

from .._help import FlowerCommand, epilog
from .sessions import sessions_app

__all__ = ["sessions_compact", "sessions_delete", "sessions_prune"]

DryRun = Annotated[bool, typer.Option("--dry-run", help="Say what would be done; change nothing.")]
Force = Annotated[
    bool,
    typer.Option(
        "--force",
        help="Also delete sessions a run's lineage names (its next wake starts afresh); never one a live run drives.",
    ),
]


@sessions_app.command(
    "delete",
    cls=FlowerCommand,
    epilog=epilog("flower sessions delete 1a2b3c4d 9f8e7d6c --dry-run   # any unique prefix of a session id"),
)
def sessions_delete(
    ctx: typer.Context,
    session_ids: Annotated[
        list[str],
        typer.Argument(help="Session ids from `flower sessions`, or unique prefixes of them.", metavar="SESSION_ID..."),
    ],
    dry_run: DryRun = False,
    force: Force = False,
) -> None:
    """Delete sessions (with their workers' transcripts) from the store; never one a live run drives."""
    from ..actions.sessions_upkeep import delete_sessions  # why: it loads the stores; `--help` must not

    delete_sessions(ctx.obj, session_ids, dry_run=dry_run, force=force)


@sessions_app.command("prune", cls=FlowerCommand, epilog=epilog("flower sessions prune --older-than 30d --dry-run"))
def sessions_prune(
    ctx: typer.Context,
    older_than: Annotated[
        str,
        typer.Option("--older-than", metavar="AGE", help="Delete sessions last written longer ago: 30d, 12h, 90m, 2w."),
    ],
    dry_run: DryRun = False,
    force: Force = False,
) -> None:
    """Delete this workspace's sessions older than AGE, except those a live run drives or a wake would resume."""
    from ..actions.sessions_upkeep import prune_sessions  # why: it loads the stores; `--help` must not

    prune_sessions(ctx.obj, older_than, dry_run=dry_run, force=force)


@sessions_app.command("compact", cls=FlowerCommand, epilog=epilog("flower sessions compact --dry-run"))
def sessions_compact(
    ctx: typer.Context,
    full: Annotated[
        bool,
        typer.Option(
            "--full", help="PostgreSQL: VACUUM FULL, which returns the space to the disk but locks each table."
        ),
    ] = False,
    dry_run: DryRun = False,
    force: Annotated[
        bool, typer.Option("--force", help="Compact even while a run drives a session of the store.")
    ] = False,
) -> None:
    """Give the space of deleted sessions back to the disk (SQLite VACUUM, PostgreSQL VACUUM) and print the sizes."""
    from ..actions.sessions_upkeep import compact_store  # why: it loads the stores; `--help` must not

    compact_store(ctx.obj, full=full, dry_run=dry_run, force=force)
