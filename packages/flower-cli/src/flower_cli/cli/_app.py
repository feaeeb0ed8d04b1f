"""The ``flower`` command put together: the app (``_root_app.py``), its global options (``_global_options.py``),
each command's command line (``commands/``), the plugin commands of other distributions (``_plugins.py``) —
and `main`, which runs it: the command line rewritten (``_argv.py``), every ending turned into an exit code.

Reading a command from the top: ``commands/go.py`` holds ``flower go``'s options and help, and calls
``actions/go.py``, which does the work; ``ctx.obj`` carries the global options (a `GlobalOptions`).
"""

from __future__ import annotations

import errno
import json
import sys

import typer

from .._shared.exits import Exit, ExitCode
from ..view import STDOUT, sanitize
from ._argv import COMMANDS, misnamed_command, rewrite_argv, split_globals
from ._global_options import GlobalOptions  # importing it makes the global options the app's callback
from ._plugins import install_plugins, missing_plugin, plugin_names
from ._root_app import app

# Importing a command's module adds the command to `app`: this order is the order `flower --help` lists them in.
# isort: off
from .commands import go, once, run, setup, doctor, analyze, version, sessions  # noqa: F401 - imported to add them
from .commands import control  # noqa: F401 - status, watch, answer, mail, stop
from .commands import ui  # noqa: F401 - imported to add it
from .commands import demo  # noqa: F401 - imported to add it
from .commands import sessions_upkeep  # noqa: F401 - sessions delete, prune, compact
# isort: on

__all__ = ["GlobalOptions", "app", "main"]


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script: exit codes per `ExitCode`, no tracebacks for what a user can fix.

    A command that fails says why in one line on stderr; with ``--json`` the same message is also the last
    line on stdout, as ``{"kind": "error", "exit": N, "message": "..."}``, so a program reading the events
    learns how the command ended without parsing stderr.
    """
    given = list(sys.argv[1:] if argv is None else argv)
    misnamed = misnamed_command(given)
    if misnamed is not None:  # before anything is created or paid for
        return _leave(ExitCode.USAGE, misnamed, _asks_for_json(given))
    args = rewrite_argv(given)
    json_mode = _asks_for_json(args)
    plugged = _plug_in(args)
    if plugged is not None:
        return _leave(ExitCode.USAGE, plugged, json_mode)
    try:
        returned = app(args=args, prog_name="flower", standalone_mode=False)
    except Exit as exc:
        return _leave(exc.code, exc.message, json_mode)
    except typer.Exit as exc:
        return _settled(int(exc.exit_code or 0))
    except (typer.Abort, KeyboardInterrupt):
        return _leave(ExitCode.INTERRUPTED, "interrupted", json_mode)
    except Exception as exc:
        # Usage errors (typer's own click, see _usage.usage_error_type) and trouble with flower's files
        # that no command translated itself; anything else is a bug and keeps its traceback.
        from ._usage import explain  # why: it reads the runtime's failures, which `--help` must not load

        named = next((a for a in args if a in COMMANDS), None)
        known = explain(exc, command=f"flower {named}" if named else "flower")
        if known is None:
            raise
        return _leave(*known, json_mode)
    return _settled(_exit_code(returned))


def _exit_code(returned: object) -> int:
    """The code a command left with: outside standalone mode click *returns* a ``typer.Exit``'s code instead of
    raising it, so a plugin command's ``raise typer.Exit(2)`` arrives here as 2 (ignoring it made failures exit 0).
    Anything else a command returns is not an exit code."""
    return returned if isinstance(returned, int) and not isinstance(returned, bool) else 0


def _plug_in(args: list[str]) -> str | None:
    """Add the plugin command the arguments name (all of them for the top-level help); the one line saying what
    to install when a known plugin command is named but not installed, else None."""
    _, rest, _ = split_globals(args)  # the command is the first word after the global options
    named = rest[0] if rest and rest[0] in plugin_names() else None
    end = args.index("--") if "--" in args else len(args)
    if named is not None:
        missing = missing_plugin(named)
        if missing is not None:
            return missing
        install_plugins(app, only=named)
    elif {"-h", "--help"} & set(args[:end]):
        install_plugins(app)
    return None


def _asks_for_json(args: list[str]) -> bool:
    """``--json`` among the options (not after ``--``, where it would be a prompt's words)."""
    end = args.index("--") if "--" in args else len(args)
    return "--json" in args[:end]


def _leave(code: ExitCode, message: str, json_mode: bool = False) -> int:
    if message:
        sys.stderr.write(sanitize(message) + "\n")
    if json_mode and code != ExitCode.DONE:
        STDOUT.write(json.dumps({"kind": "error", "exit": int(code), "message": message}, ensure_ascii=False) + "\n")
    return _settled(int(code))


def _settled(code: int) -> int:
    """``code``, once stdout is flushed; a stdout that could not take the output (a full disk) is said, once.

    Results go through `output.STDOUT`, which keeps the first failure and lets the run finish; anything else
    (typer's own echo) is flushed here, so the interpreter's flush at exit cannot fail later with an
    "Exception ignored" report and exit status 120.
    """
    STDOUT.flush()
    failure = STDOUT.failure
    if failure is None or failure.errno == errno.EPIPE:  # EPIPE: the reader left on purpose (`| head`)
        return code
    sys.stderr.write(
        f"could not write to standard output ({failure.strerror or failure}): the run's sessions are kept — "
        "`flower sessions` lists them, `flower sessions show ID` prints one; free space where the output goes\n"
    )
    return code or int(ExitCode.CONFIG)
