"""``flower status``, ``flower watch [RUN]``, ``flower answer [RUN] TEXT``, ``flower mail [RUN] TEXT``,
``flower stop [RUN]``: see and steer a run from any terminal, through its store (this workspace's, or --store)."""

from __future__ import annotations

from typing import Annotated

import typer

from .._help import FlowerCommand, epilog
from .._root_app import app

__all__ = ["answer", "mail", "status", "stop", "watch"]

# One run, or the one running run when left out (watch, stop).
OneRun = Annotated[
    str | None,
    typer.Argument(help="A run id (or a unique prefix) [default: the one running run].", metavar="RUN"),
]
_RUN_WORDS = typer.Argument(
    help="RUN (a run id from `flower status`, or a unique prefix) may be left out when one run is running; "
    "the rest is the text.",
    metavar="[RUN] TEXT",
    show_default=False,
)


@app.command(
    cls=FlowerCommand,
    epilog=epilog(
        "flower status -w ~/project   # the runs of that workspace",
        "flower status --store postgresql://flower@db/flower   # every run of a shared store",
    ),
)
def status(ctx: typer.Context) -> None:
    """The runs of this workspace (or --store): running / waiting / done / stopped / dead, step, session,
    context, cost, and the question each waits on."""
    from ..actions.control import show_status  # why: it loads the stores; `--help` must not

    show_status(ctx.obj)


@app.command(
    cls=FlowerCommand,
    epilog=epilog("flower watch   # the one running run; Ctrl-C stops watching, never the run"),
)
def watch(
    ctx: typer.Context,
    run: OneRun = None,
    new: Annotated[
        bool, typer.Option("--new", help="Only what happens from now on, not what happened so far.")
    ] = False,
) -> None:
    """Follow a run's progress as the terminal that started it shows it, read-only (Ctrl-C leaves the run alone)."""
    from ..actions.control import watch_run  # why: it loads the stores; `--help` must not

    watch_run(ctx.obj, run, only_new=new)


@app.command(
    cls=FlowerCommand,
    epilog=epilog('flower answer "PostgreSQL, and keep the schema small"', "flower answer 20261206-0412 2"),
)
def answer(
    ctx: typer.Context,
    words: Annotated[list[str], _RUN_WORDS],
    question: Annotated[
        str | None,
        typer.Option(
            "--question", "-q", metavar="ID", help="Answer this question (q1, q2…) [default: the one waiting]."
        ),
    ] = None,
) -> None:
    """Answer the question a run waits on (a number picks one of its options); the Q&A log says who answered."""
    from ..actions.control import tell_run  # why: it loads the stores; `--help` must not

    tell_run(ctx.obj, "answer", words, question=question or "")


@app.command(cls=FlowerCommand, epilog=epilog('flower mail "the API must also take CSV"'))
def mail(ctx: typer.Context, words: Annotated[list[str], _RUN_WORDS]) -> None:
    """Mail a running run's coordinator: appended to its brief, read at its next inbox check."""
    from ..actions.control import tell_run  # why: it loads the stores; `--help` must not

    tell_run(ctx.obj, "mail", words)


@app.command(cls=FlowerCommand, epilog=epilog("flower stop   # the one running run", "flower stop 20261206-0412"))
def stop(
    ctx: typer.Context,
    run: OneRun = None,
) -> None:
    """Stop a run: the step in flight is recorded, and `flower` in its workspace wakes it again."""
    from ..actions.control import tell_run  # why: it loads the stores; `--help` must not

    tell_run(ctx.obj, "stop", [run] if run else [])
