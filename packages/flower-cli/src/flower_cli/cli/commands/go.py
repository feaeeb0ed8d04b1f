"""``flower go [ASK]`` — and ``flower "build X"``, which means the same: clarify → goal → judged work rounds."""

from __future__ import annotations

from typing import Annotated

import typer

from .._help import FlowerCommand, epilog
from .._model import use_model
from .._options import BudgetOption, ModelOption, NoHandoffOption, WindowOption
from .._root_app import app

__all__ = ["go"]


@app.command(
    cls=FlowerCommand,
    context_settings={"allow_interspersed_args": True},
    epilog=epilog('flower go --asks 3 "a CLI that converts CSV to JSON"'),
)
def go(
    ctx: typer.Context,
    ask: Annotated[
        list[str] | None,
        typer.Argument(
            help="What to build, in a sentence (quotes optional); - reads it from stdin.",
            metavar="ASK",
            show_default=False,
        ),
    ] = None,
    asks: Annotated[
        int | None,
        typer.Option(
            "--asks", metavar="N", help="At most N questions to you; 0 = none. [default: no limit]", show_default=False
        ),
    ] = None,
    rounds: Annotated[
        int | None,
        typer.Option(
            "--rounds",
            metavar="N",
            help="Work rounds in all, each checked by a fresh judge. [default: 3]",
            show_default=False,
        ),
    ] = None,
    no_goal: Annotated[bool, typer.Option("--no-goal", help="No goal and no judge: one work round.")] = False,
    judge_can_run: Annotated[
        bool, typer.Option("--judge-can-run", help="Let the judges run commands (they stay read-only otherwise).")
    ] = False,
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout",
            metavar="SECONDS",
            help="Seconds a question waits for you; 0 = never wait (it decides and records the assumption); inf = forever. [default: 1800]",
            show_default=False,
        ),
    ] = None,
    isolate: Annotated[
        bool,
        typer.Option("--isolate", help="Each worker in its own git worktree (the workspace must be a git repository)."),
    ] = False,
    window: WindowOption = None,
    no_handoff: NoHandoffOption = False,
    new: Annotated[
        bool, typer.Option("--new", help="Start over: archive the brief, goal and lineage under notes/archive/.")
    ] = False,
    clarify_only: Annotated[
        bool, typer.Option("--clarify-only", help="Only clarify: write the brief, then stop.")
    ] = False,
    no_trim: Annotated[
        bool, typer.Option("--no-trim", help="Do not trim old large tool results when a session is resumed.")
    ] = False,
    budget: BudgetOption = None,
    model: ModelOption = None,
) -> None:
    """Clarify -> set a goal -> work until an independent judge says it is done (the default command)."""
    use_model(model)
    # why: the go flow loads the Runtime and the SDK; `flower go --help` must not
    from ...go import GoSettings
    from ..actions.go import run_go

    run_go(
        ctx.obj,
        GoSettings(
            ask=" ".join(ask or []),
            asks=asks,
            rounds=rounds,
            goal=not no_goal,
            judge_can_run=judge_can_run,
            timeout=timeout,
            isolate=isolate,
            window=window,
            handoff=not no_handoff,
            new=new,
            clarify_only=clarify_only,
            trim=not no_trim,
            budget=budget,
        ),
    )
