"""``flower once [PROMPT]``: one agent, one step; the answer on stdout, progress on stderr."""

from __future__ import annotations

from enum import Enum
from typing import Annotated

import typer

from .._help import FlowerCommand, epilog
from .._model import use_model
from .._options import BudgetOption, ModelOption, NoHandoffOption, WindowOption
from .._root_app import app

__all__ = ["PermissionMode", "once"]


class PermissionMode(str, Enum):  # noqa: UP042 - typer shows and parses (str, Enum) choices as it always has
    default = "default"
    acceptEdits = "acceptEdits"  # noqa: N815 - the SDK's spelling
    plan = "plan"
    dontAsk = "dontAsk"  # noqa: N815 - the SDK's spelling
    bypassPermissions = "bypassPermissions"  # noqa: N815 - the SDK's spelling


@app.command(
    cls=FlowerCommand,
    epilog=epilog('flower once -t Bash,Read "run the tests and tell me what fails"'),
)
def once(
    ctx: typer.Context,
    prompt: Annotated[
        str | None,
        typer.Argument(
            help="The prompt for a single agent; - reads it from stdin, and so does a pipe when it is left out.",
            metavar="PROMPT",
            show_default=False,
        ),
    ] = None,
    instructions: Annotated[
        str,
        typer.Option("-i", "--instructions", metavar="TEXT", help="Role instructions appended to Claude Code's own."),
    ] = "",
    tools: Annotated[
        str,
        typer.Option(
            "-t", "--tools", metavar="TOOLS", help="Comma-separated tools that run without asking (e.g. Bash,Read)."
        ),
    ] = "Read,Glob,Grep",
    permission_mode: Annotated[
        PermissionMode,
        typer.Option(
            "-p",
            "--permission-mode",
            metavar="MODE",
            help="The SDK permission mode: default, acceptEdits, plan, dontAsk or bypassPermissions.",
        ),
    ] = PermissionMode.default,
    budget: BudgetOption = None,
    resume: Annotated[
        str | None,
        typer.Option(
            "--resume",
            metavar="SESSION_ID",
            help="Continue this session (an id from `flower sessions`, or any unique prefix of one).",
        ),
    ] = None,
    fork: Annotated[
        bool, typer.Option("--fork", help="With --resume: branch off the session, leaving it untouched.")
    ] = False,
    window: WindowOption = None,
    no_handoff: NoHandoffOption = False,
    model: ModelOption = None,
) -> None:
    """Run one agent once; the answer goes to stdout."""
    use_model(model)
    from ..actions.once import run_once  # why: it loads the Runtime and the SDK; `--help` must not

    run_once(
        ctx.obj,
        prompt,
        instructions=instructions,
        tools=tools,
        permission_mode=permission_mode.value,
        budget=budget,
        resume=resume,
        fork=fork,
        window=window,
        no_handoff=no_handoff,
    )
