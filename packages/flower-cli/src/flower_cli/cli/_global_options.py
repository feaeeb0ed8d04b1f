"""The options every ``flower`` command shares, declared once: the app's callback takes them (before or after
the command: ``_argv.py`` moves them in front), checks what can be checked before anything runs, and hands
them to the command as ``ctx.obj``, a `GlobalOptions`.

The actions (``cli/actions/``) take that `GlobalOptions`: ``opening.py`` opens the Runtime on its workspace,
run dir and store (``store.py``); ``output.py`` makes the view its ``-v``, ``--color`` and ``--json`` ask for.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from .._shared.exits import Exit, ExitCode
from ._root_app import app
from ._versions import print_version
from ._workspace import check_workspace

__all__ = ["ColorMode", "GlobalOptions", "global_options"]


@dataclass
class GlobalOptions:
    workspace: Path
    run_dir: Path
    verbose: bool
    workbench: bool
    trim: bool
    json: bool
    store: str | None = None  # --store URL / FLOWER_STORE_URL; None: <run dir>/sessions.db
    color: str = "auto"  # --color: auto (a terminal, unless NO_COLOR; FORCE_COLOR forces), always, never
    limit_wait: float | None = None  # --limit-wait / FLOWER_LIMIT_WAIT in seconds; None: the Runtime's default (6 h)


class ColorMode(str, Enum):  # noqa: UP042 - typer shows and parses (str, Enum) choices as it always has
    auto = "auto"
    always = "always"
    never = "never"


# Declared apart so the callback stays readable: what --limit-wait takes (parsed by `_limit_wait`).
LimitWaitOption = Annotated[
    str | None,
    typer.Option(
        "--limit-wait",
        metavar="DURATION",
        envvar="FLOWER_LIMIT_WAIT",
        show_envvar=True,
        help="Longest usage-limit reset to wait out before resuming the same session (e.g. 90s, 20m, 6h; 0 = never wait: stop with exit 5) [default: 6h].",
    ),
]


@app.callback()
def global_options(
    ctx: typer.Context,
    workspace: Annotated[
        Path, typer.Option("-w", "--workspace", metavar="PATH", help="The agent's working directory.")
    ] = Path("."),
    run_dir: Annotated[
        Path | None,
        typer.Option(
            "-r",
            "--run-dir",
            metavar="PATH",
            help="Where sessions.db, manifest.json and lineage.json live [default: <workspace>/runs].",
        ),
    ] = None,
    verbose: Annotated[
        bool, typer.Option("-v", "--verbose", help="Show subagent text, tool results, settings and their sources.")
    ] = False,
    workbench: Annotated[
        bool, typer.Option("-W", "--workbench", help="Give the agent a workbench at <run dir>/workbench.")
    ] = False,
    trim: Annotated[
        bool, typer.Option("-T", "--trim", help="Trim old large tool results when a session is resumed.")
    ] = False,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print one JSON event per line on stdout instead of the human view.")
    ] = False,
    store: Annotated[
        str | None,
        typer.Option(
            "--store",
            metavar="URL",
            envvar="FLOWER_STORE_URL",
            show_envvar=True,
            help="Session store URL: sqlite:///path/sessions.db, or postgresql://user:password@host/db to share runs between machines [default: <run dir>/sessions.db].",
        ),
    ] = None,
    color: Annotated[
        ColorMode,
        typer.Option(
            "--color",
            case_sensitive=False,
            help="Colour on stderr: auto = on a terminal, unless NO_COLOR is set (FORCE_COLOR forces it).",
        ),
    ] = ColorMode.auto,
    limit_wait: LimitWaitOption = None,
    version: Annotated[
        bool,
        typer.Option(
            "-V",
            "--version",
            callback=print_version,
            is_eager=True,
            help="Print the versions of flower's distributions, the SDK and the bundled Claude Code.",
        ),
    ] = False,
) -> None:
    try:
        ws = workspace.expanduser().resolve()
        # An explicit -r is a path typed in the shell: relative to where it was typed. The default lives under
        # the workspace, so one run's state never splits between two trees.
        rd = run_dir.expanduser().resolve() if run_dir is not None else ws / "runs"
    except OSError as exc:  # the shell's current directory was removed under it
        raise Exit(
            ExitCode.CONFIG,
            f"the current directory is gone ({exc.strerror or exc}): cd to an existing one, or give absolute -w/-r paths",
        ) from exc
    check_workspace(ws)  # a mistyped -w is a usage error, not a new empty project (nothing is created)
    if store:
        _check_store_url(store)
    ctx.obj = GlobalOptions(
        ws, rd, verbose, workbench, trim, json_out, store or None, color.value, limit_wait=_limit_wait(limit_wait)
    )


def _limit_wait(raw: str | None) -> float | None:
    """Seconds from ``--limit-wait`` / ``FLOWER_LIMIT_WAIT``; exit 2 for a value that is no duration."""
    if raw is None or not raw.strip():
        return None
    from ..runtime import parse_wait  # why: the runtime's parser, loaded only when the option is given

    try:
        return parse_wait(raw)
    except ValueError as exc:
        raise Exit(ExitCode.USAGE, f"--limit-wait: {exc}") from None


def _check_store_url(url: str) -> None:
    """Exit 2 now for a malformed ``--store`` value or a SQLite file in a missing folder, before anything runs
    (no connection is made, nothing is created).

    A well-formed URL that does not work is found when the command opens it (``actions/store.py``: exit 3).
    """
    import flower_stores  # why: a sibling library; loaded only when --store is given, not for every --help

    try:
        path = flower_stores.check_store_url(url)
    except flower_stores.StoreUrlError as exc:
        raise Exit(ExitCode.USAGE, str(exc)) from None
    if path is not None and not path.expanduser().parent.is_dir():
        # Like a mistyped -w: a typo in the path must not become a new tree of folders holding a new, empty store.
        folder = path.expanduser().parent
        raise Exit(
            ExitCode.USAGE,
            f"the store's folder {folder} does not exist (nothing was created): create it with "
            f"`mkdir -p {shlex.quote(str(folder))}` or give --store a file in an existing folder",
        )
