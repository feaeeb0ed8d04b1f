"""The command line's usage errors (a mistyped option, a missing argument, a bad value), said in one line.

The parser is typer's; the runtime's `explain` covers trouble with flower's files, the store and credentials.
"""

from __future__ import annotations

from pathlib import Path

import typer

from .._shared.exits import ExitCode
from ..runtime import explain as explain_runtime_trouble

__all__ = ["describe_usage_error", "explain", "usage_error_type"]


def usage_error_type() -> type[Exception]:
    """The parser's usage-error class in the typer that is installed: the base of ``typer.BadParameter``.

    typer carries its own copy of click since 0.26 (``typer._click``, a private module), so matching
    ``click.ClickException`` — a different class, from the separately installed click if any — let every
    mistyped option through as a traceback with exit 1. ``typer.BadParameter`` is public in every typer we
    support, and its base is the usage error whether click is vendored or not (tests/cli pins that down).
    """
    base = typer.BadParameter.__base__
    assert base is not None and issubclass(base, Exception)
    return base


def describe_usage_error(exc: Exception, command: str = "flower") -> str:
    """``flower once: No such option: --bogus (see `flower once --help`)``: what is wrong, where to look.

    ``command`` is used when the error does not carry its context (click raises some without one).
    """
    ctx = getattr(exc, "ctx", None)
    command = getattr(ctx, "command_path", None) or command
    format_message = getattr(exc, "format_message", None)
    message = format_message() if callable(format_message) else str(exc)
    return f"{command}: {_one_line(str(message))} (see `{command} --help`)"


def explain(exc: BaseException, *, store: Path | None = None, command: str = "flower") -> tuple[ExitCode, str] | None:
    """(exit code, one line) for a usage error of ``command`` or trouble a user can fix; None for a bug."""
    if isinstance(exc, usage_error_type()):
        return ExitCode.USAGE, describe_usage_error(exc, command)
    return explain_runtime_trouble(exc, store=store)


def _one_line(text: str) -> str:
    return " ".join(text.split())
