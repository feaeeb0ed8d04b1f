"""The ``flower`` command, on typer. Heavy imports (the SDK, the stores) happen inside the commands, so
``flower --help`` stays fast."""

from __future__ import annotations

import errno
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from .._shared.exits import Exit, ExitCode
from ._argv import misnamed_command, rewrite_argv, split_globals
from ._global_options import GlobalOptions
from ._help import FlowerCommand, FlowerGroup, epilog

__all__ = ["GlobalOptions", "app", "main"]

# Each command imports its implementation (`commands/<name>.py`, which imports the Runtime, the SDK and the
# sibling libraries) inside its own function: that is what keeps `flower --help` from paying for them
# (tests/cli/test_startup_imports.py). Everything below the command line imports at the top.
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
sessions_app = typer.Typer(
    help="List or show the sessions of this workspace from the run dir's sessions.db.",
    rich_markup_mode=None,
    cls=FlowerGroup,
    epilog=epilog("flower sessions show 1a2b3c4d   # any unique prefix of a session id"),
)
app.add_typer(sessions_app, name="sessions")


class ColorMode(str, Enum):  # noqa: UP042 - typer shows and parses (str, Enum) choices as it always has
    auto = "auto"
    always = "always"
    never = "never"


def _version(value: bool) -> None:
    if value:
        from ._versions import version_report

        typer.echo(version_report(), nl=False)
        raise typer.Exit()


@app.callback()
def _globals(
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
    version: Annotated[
        bool,
        typer.Option(
            "-V",
            "--version",
            callback=_version,
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
    from ._workspace import check_workspace

    check_workspace(ws)  # a mistyped -w is a usage error, not a new empty project (nothing is created)
    if store:
        from .commands.store import check_store_url

        check_store_url(store)  # a malformed URL is exit 2 before anything runs
    ctx.obj = GlobalOptions(ws, rd, verbose, workbench, trim, json_out, store or None, color.value)


class PermissionMode(str, Enum):  # noqa: UP042 - typer shows and parses (str, Enum) choices as it always has
    default = "default"
    acceptEdits = "acceptEdits"  # noqa: N815 - the SDK's spelling
    plan = "plan"
    dontAsk = "dontAsk"  # noqa: N815 - the SDK's spelling
    bypassPermissions = "bypassPermissions"  # noqa: N815 - the SDK's spelling


_WINDOW_HELP = (
    "The model's context window in tokens (e.g. 200k, 1m); a session hands off at window - max(50k, 25%) "
    "[default: FLOWER_WINDOW, else the smallest overflow seen, else 200k (1M for a model name ending in 1m)]."
)
_NO_HANDOFF_HELP = "Let the harness compact the context itself instead of handing off to a fresh session."


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
    window: Annotated[str | None, typer.Option("--window", metavar="TOKENS", help=_WINDOW_HELP)] = None,
    no_handoff: Annotated[bool, typer.Option("--no-handoff", help=_NO_HANDOFF_HELP)] = False,
    new: Annotated[
        bool, typer.Option("--new", help="Start over: archive the brief, goal and lineage under notes/archive/.")
    ] = False,
    clarify_only: Annotated[
        bool, typer.Option("--clarify-only", help="Only clarify: write the brief, then stop.")
    ] = False,
    no_trim: Annotated[
        bool, typer.Option("--no-trim", help="Do not trim old large tool results when a session is resumed.")
    ] = False,
) -> None:
    """Clarify -> set a goal -> work until an independent judge says it is done (the default command)."""
    from ..go import GoSettings
    from .commands.go import run_go

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
        ),
    )


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
    budget: Annotated[
        float | None, typer.Option("-b", "--budget", metavar="USD", help="Hard cost cap in USD for this query.")
    ] = None,
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
    window: Annotated[str | None, typer.Option("--window", metavar="TOKENS", help=_WINDOW_HELP)] = None,
    no_handoff: Annotated[bool, typer.Option("--no-handoff", help=_NO_HANDOFF_HELP)] = False,
) -> None:
    """Run one agent once; the answer goes to stdout."""
    from .commands.once import run_once

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
    window: Annotated[str | None, typer.Option("--window", metavar="TOKENS", help=_WINDOW_HELP)] = None,
    no_handoff: Annotated[bool, typer.Option("--no-handoff", help=_NO_HANDOFF_HELP)] = False,
) -> None:
    """Run a workflow defined in Python."""
    from .commands.run import run_workflow

    run_workflow(ctx.obj, target, window=window, no_handoff=no_handoff)


@app.command(cls=FlowerCommand, epilog=epilog("flower setup --token sk-ant-... --model claude-sonnet-4-5"))
def setup(
    ctx: typer.Context,
    token: Annotated[
        str | None, typer.Option("--token", metavar="TOKEN", help="API key (sk-ant-…) or gateway token.")
    ] = None,
    base_url: Annotated[
        str | None, typer.Option("--base-url", metavar="URL", help="Gateway base URL (without /v1).")
    ] = None,
    model: Annotated[str | None, typer.Option("--model", metavar="MODEL", help="Model name to use by default.")] = None,
) -> None:
    """Store credentials in the user .env (${XDG_CONFIG_HOME:-~/.config}/flower/.env, mode 0600)."""
    from .commands.setup import run_setup_command

    run_setup_command(ctx.obj, token=token, base_url=base_url, model=model)


@app.command(cls=FlowerCommand, epilog=epilog("flower doctor --no-probe   # everything but the paid credential probe"))
def doctor(
    ctx: typer.Context,
    no_probe: Annotated[
        bool, typer.Option("--no-probe", help="Skip the live credential probe (one tiny paid request).")
    ] = False,
) -> None:
    """Check settings (and where each came from), the endpoint, the credential and the store."""
    from .commands.doctor import run_doctor

    run_doctor(ctx.obj, probe=not no_probe)


@app.command(
    cls=FlowerCommand,
    epilog=epilog(
        "flower analyze --html run.html   # and open run.html in a browser",
        "flower analyze --store postgresql://flower@db/flower --run nightly-42   # a fleet run, from any machine",
    ),
)
def analyze(
    ctx: typer.Context,
    run_dir: Annotated[
        Path | None,
        typer.Argument(
            help="A run dir (or a workspace holding runs/) [default: this workspace's run dir].",
            metavar="RUN_DIR",
            show_default=False,
        ),
    ] = None,
    html: Annotated[
        Path | None,
        typer.Option(
            "--html", metavar="PATH", help="Also write one self-contained HTML page with the charts to this file."
        ),
    ] = None,
    wide: Annotated[
        bool, typer.Option("--wide", help="Every column, one line per row (the default fits 100 columns).")
    ] = False,
    run: Annotated[
        str | None,
        typer.Option(
            "--run",
            metavar="ID",
            help="Read run ID's records (steps, lineage) and sessions from the --store instead of a run dir.",
        ),
    ] = None,
) -> None:
    """Where a run's context, work and money went: per step and per session, read-only (--json for programs)."""
    from .commands.analyze import run_analyze

    run_analyze(ctx.obj, run_dir, html, wide=wide, run=run)


@app.command("version", cls=FlowerCommand, epilog=epilog("flower --version", global_options=False))
def version_cmd() -> None:
    """Print the versions of flower's distributions, the SDK and the bundled Claude Code (= flower --version)."""
    _version(True)


@sessions_app.callback(invoke_without_command=True)
def sessions_list(ctx: typer.Context) -> None:
    """List this workspace's sessions (newest first)."""
    if ctx.invoked_subcommand is None:
        from .commands.sessions import list_sessions

        list_sessions(ctx.obj)


@sessions_app.command(
    "show", cls=FlowerCommand, epilog=epilog("flower sessions show 1a2b3c4d   # any unique prefix of a session id")
)
def sessions_show(
    ctx: typer.Context,
    session_id: Annotated[
        str,
        typer.Argument(help="A session id from `flower sessions`, or any unique prefix of one.", metavar="SESSION_ID"),
    ],
) -> None:
    """Show one session's conversation, one line per message."""
    from .commands.sessions import show_session

    show_session(ctx.obj, session_id)


@sessions_app.command(
    "import",
    cls=FlowerCommand,
    epilog=epilog("flower sessions import 1a2b3c4d-… --from ~/.claude/projects/<key>/1a2b3c4d-….jsonl"),
)
def sessions_import(
    ctx: typer.Context,
    session_id: Annotated[
        str,
        typer.Argument(help="The full id of the session whose transcript the store lacks.", metavar="SESSION_ID"),
    ],
    source: Annotated[
        Path | None,
        typer.Option(
            "--from",
            help="The session's local transcript (<session id>.jsonl) [default: the harness's copy under "
            "~/.claude/projects, else <run dir>/unstored].",
            metavar="PATH",
        ),
    ] = None,
) -> None:
    """Add to the store what the session's local transcript holds and the store lacks (idempotent)."""
    from .commands.sessions import import_session

    import_session(ctx.obj, session_id, source)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script: exit codes per `ExitCode`, no tracebacks for what a user can fix.

    A command that fails says why in one line on stderr; with ``--json`` the same message is also the last
    line on stdout, as ``{"kind": "error", "exit": N, "message": "..."}``, so a program reading the events
    learns how the command ended without parsing stderr.
    """
    given = list(sys.argv[1:] if argv is None else argv)
    misnamed = misnamed_command(given)
    if misnamed is not None:  # before anything is created or paid for
        return _leave(ExitCode.USAGE, misnamed)
    args = rewrite_argv(given)
    json_mode = _asks_for_json(args)
    plugged = _plug_in(args)
    if plugged is not None:
        return _leave(ExitCode.USAGE, plugged, json_mode)
    try:
        app(args=args, prog_name="flower", standalone_mode=False)
    except Exit as exc:
        return _leave(exc.code, exc.message, json_mode)
    except typer.Exit as exc:
        return _settled(int(exc.exit_code or 0))
    except (typer.Abort, KeyboardInterrupt):
        return _leave(ExitCode.INTERRUPTED, "interrupted", json_mode)
    except Exception as exc:
        # Usage errors (typer's own click, see _usage.usage_error_type) and trouble with flower's files
        # that no command translated itself; anything else is a bug and keeps its traceback.
        from ._argv import COMMANDS
        from ._usage import explain

        named = next((a for a in args if a in COMMANDS), None)
        known = explain(exc, command=f"flower {named}" if named else "flower")
        if known is None:
            raise
        return _leave(*known, json_mode)
    return _settled(0)


def _plug_in(args: list[str]) -> str | None:
    """Add the plugin command the arguments name (all of them for the top-level help); the one line saying what
    to install when a known plugin command is named but not installed, else None."""
    from ._plugins import install_plugins, missing_plugin, plugin_names

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
        from ..view import sanitize

        sys.stderr.write(sanitize(message) + "\n")
    if json_mode and code != ExitCode.DONE:
        import json

        from ..view import STDOUT

        STDOUT.write(json.dumps({"kind": "error", "exit": int(code), "message": message}, ensure_ascii=False) + "\n")
    return _settled(int(code))


def _settled(code: int) -> int:
    """``code``, once stdout is flushed; a stdout that could not take the output (a full disk) is said, once.

    Results go through `output.STDOUT`, which keeps the first failure and lets the run finish; anything else
    (typer's own echo) is flushed here, so the interpreter's flush at exit cannot fail later with an
    "Exception ignored" report and exit status 120.
    """
    from ..view import STDOUT

    STDOUT.flush()
    failure = STDOUT.failure
    if failure is None or failure.errno == errno.EPIPE:  # EPIPE: the reader left on purpose (`| head`)
        return code
    sys.stderr.write(
        f"could not write to standard output ({failure.strerror or failure}): the run's sessions are kept — "
        "`flower sessions` lists them, `flower sessions show ID` prints one; free space where the output goes\n"
    )
    return code or int(ExitCode.CONFIG)
