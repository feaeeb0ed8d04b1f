"""The ``flower`` typer app itself: its name, its help and its examples.

Each command adds itself to it (``cli/commands/``), the global options are its callback
(``_global_options.py``), and ``_app.py`` puts them together and runs it.
"""

from __future__ import annotations

import typer

from ._help import FlowerGroup, epilog

__all__ = ["app"]

app = typer.Typer(
    name="flower",
    help=(
        "flower: a durable, portable runtime for long-horizon agents on the Claude Agent SDK.\n\n"
        'With no command, `flower "build X"` means `flower go "build X"`.'
    ),
    cls=FlowerGroup,
    epilog=epilog(
        'flower "a CLI that converts CSV to JSON"    # = flower go "…"',
        'echo "summarise README.md" | flower once',
        "flower COMMAND --help                       # its options and an example",
        global_options=False,
    )
    + "\n\nShell completion: flower --install-completion (bash, zsh, fish, PowerShell), then open a new shell.",
    add_completion=True,
    no_args_is_help=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
