"""The options several commands share, declared once: each command names them in its signature
(``window: WindowOption = None``), so the flag, its metavar and its help read the same everywhere.

The global options (``-w``, ``-r``, ``--store`` …) are not here: they are the app's own, declared once in
``_global_options.py``, and every command receives them as ``ctx.obj`` (a `GlobalOptions`).
"""

from __future__ import annotations

from typing import Annotated

import typer

__all__ = ["BudgetOption", "ModelOption", "NoHandoffOption", "WindowOption"]

# ``go``, ``once`` and ``run``: when a session hands off to a fresh one (actions/handoff.py reads them).
WindowOption = Annotated[
    str | None,
    typer.Option(
        "--window",
        metavar="TOKENS",
        help=(
            "The model's context window in tokens (e.g. 200k, 1m); a session hands off at window - max(50k, 25%) "
            "[default: FLOWER_WINDOW, else the smallest overflow seen, else 200k (1M for a model name ending in 1m)]."
        ),
    ),
]
NoHandoffOption = Annotated[
    bool,
    typer.Option(
        "--no-handoff", help="Let the harness compact the context itself instead of handing off to a fresh session."
    ),
]
# ``go``, ``run`` and ``once``: what the whole run may spend (actions/budget.py reads it).
BudgetOption = Annotated[
    float | None,
    typer.Option(
        "-b",
        "--budget",
        metavar="USD",
        help=(
            "What the whole run may spend, every session counted; at 80 % one line says so, when it is spent the "
            "turn in flight finishes and the run stops (exit 6) [default: FLOWER_BUDGET, else no limit]."
        ),
        show_default=False,
    ),
]
# ``go``, ``once`` and ``run``: the model of this run (``_model.py`` hands it to Claude Code).
ModelOption = Annotated[
    str | None,
    typer.Option(
        "--model",
        metavar="MODEL",
        help="The model for this run, e.g. claude-sonnet-4-5 [default: ANTHROPIC_MODEL, else Claude Code's own].",
    ),
]
