"""Entry point of the ``flower`` console script."""

from __future__ import annotations

import typer

from . import __version__

app = typer.Typer(
    name="flower",
    help="flower: a durable, portable runtime for long-horizon agents on the Claude Agent SDK.",
    no_args_is_help=True,
    add_completion=False,
)


@app.command()
def version() -> None:
    """Print the installed flower version."""
    typer.echo(__version__)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
