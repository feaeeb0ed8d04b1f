"""``flower run TARGET``: run a workflow defined in Python (``file.py:attr`` or ``module:attr``)."""

from __future__ import annotations

from typing import Annotated

import typer

from .._help import FlowerCommand, epilog
from .._model import use_model
from .._options import BudgetOption, ModelOption, NoHandoffOption, WindowOption
from .._root_app import app

__all__ = ["run_cmd"]


@app.command("run", cls=FlowerCommand, epilog=epilog("flower run flows.py:main"))
def run_cmd(
    ctx: typer.Context,
    target: Annotated[
        str,
        typer.Argument(
            help="A workflow: file.py:attr or module:attr (a Workflow, or a function returning one).",
            metavar="TARGET",
        ),
    ],
    window: WindowOption = None,
    no_handoff: NoHandoffOption = False,
    budget: BudgetOption = None,
    model: ModelOption = None,
) -> None:
    """Run a workflow defined in Python."""
    use_model(model)
    from ..actions.run import run_workflow  # why: it loads the Runtime and the SDK; `--help` must not

    run_workflow(ctx.obj, target, window=window, no_handoff=no_handoff, budget=budget)
