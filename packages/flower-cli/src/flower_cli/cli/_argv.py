"""Rewrite the command line so that ``flower "build X"`` means ``flower go "build X"`` and global flags work
before or after the subcommand (``flower once -v "hi"`` = ``flower -v once "hi"``) — and stop a mistyped
command (``flower sesions``) before it becomes a paid ``go`` request."""

from __future__ import annotations

import re
import shlex

__all__ = ["COMMANDS", "GLOBAL_FLAGS", "GLOBAL_VALUED", "misnamed_command", "rewrite_argv", "split_globals"]

# "fleet" comes with flower-fleet (cli/_plugins.py): named here so that without it installed `flower fleet` says
# what to install instead of becoming a `go` request.
COMMANDS: tuple[str, ...] = ("go", "once", "run", "setup", "doctor", "sessions", "analyze", "version", "fleet")
COMMANDS += ("status", "watch", "answer", "mail", "stop")  # talk to a run from another terminal
COMMANDS += ("ui",)  # the live page of the runs
COMMANDS += ("demo",)  # a whole run against a scripted model, free
GLOBAL_VALUED = ("-w", "--workspace", "-r", "--run-dir", "--store", "--color", "--limit-wait")
GLOBAL_FLAGS = ("-v", "--verbose", "-W", "--workbench", "-T", "--trim", "--json")
# Options of the app itself that stand in the command's place (not a `go` request).
_APP_OPTIONS = ("-h", "--help", "--version", "-V", "--install-completion", "--show-completion")
# Words people type for a command flower spells differently.
_WORDS_FOR_COMMANDS = {"help": "flower --help", "list": "flower sessions", "ls": "flower sessions"}
_WORD = re.compile(r"^[A-Za-z][A-Za-z-]*$")


def _global_width(args: list[str], i: int) -> int:
    """How many tokens the global option at ``args[i]`` spans (0 when it is not one)."""
    token = args[i]
    if token in GLOBAL_FLAGS:
        return 1
    if token in GLOBAL_VALUED:
        return 2 if i + 1 < len(args) else 1
    if any(token.startswith(f"{name}=") for name in GLOBAL_VALUED if name.startswith("--")):
        return 1
    return 0


def _split(args: list[str]) -> tuple[list[str], list[str], bool]:
    """(global options, the rest, complete): ``complete`` is False when a valued global option lacks its value."""
    globals_: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(args):
        if args[i] == "--":
            rest.extend(args[i:])
            break
        width = _global_width(args, i)
        if width == 1 and args[i] in GLOBAL_VALUED:
            return [*globals_, args[i]], [], False
        if width:
            globals_.extend(args[i : i + width])
            i += width
        else:
            rest.append(args[i])
            i += 1
    return globals_, rest, True


def split_globals(args: list[str]) -> tuple[list[str], list[str], bool]:
    """(global options, the rest, complete): the command is the first word of the rest."""
    return _split(args)


def rewrite_argv(args: list[str]) -> list[str]:
    """Global options first, then the subcommand (``go`` when none is named), then the rest."""
    globals_, rest, complete = _split(args)
    if not complete:
        # `flower once hi -w`: the value is missing. Moved in front of the command, -w would take the
        # command for its value; alone, it makes the parser say exactly what is wrong.
        return globals_
    if not rest:
        return globals_ if {"-h", "--help"} & set(args) else globals_ + ["go"]
    if rest[0] in _APP_OPTIONS:
        return globals_ + rest
    if rest[0] not in COMMANDS:
        rest = ["go", *rest]
    return globals_ + rest


def _distance(a: str, b: str) -> int:
    """Edits (insert, delete, substitute, swap two neighbours) that turn ``a`` into ``b``."""
    rows = [list(range(len(b) + 1))]
    for i in range(1, len(a) + 1):
        row = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            row[j] = min(
                rows[i - 1][j] + 1,
                row[j - 1] + 1,
                rows[i - 1][j - 1] + (a[i - 1] != b[j - 1]),
            )
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                row[j] = min(row[j], rows[i - 2][j - 2] + 1)
        rows.append(row)
    return rows[len(a)][len(b)]


def _near_command(word: str) -> str | None:
    """The command ``word`` is a slip of, or None.

    Short words must be one edit away, longer ones two: `sesions`, `analyse`, `docter`, `onec` trip; real
    one-word asks (`refactor`, `done`, `docs`, `rerun`, `test`) do not. Words under four letters never do.
    """
    lowered = word.lower()
    if len(lowered) < 4:
        return None
    allowed = 1 if len(lowered) < 6 else 2
    scored = sorted((_distance(lowered, c), c) for c in COMMANDS if len(c) >= 3)
    best, command = scored[0]
    return command if best <= allowed else None


def misnamed_command(args: list[str]) -> str | None:
    """The one-line usage error for a first word that is no command but reads like one, or None.

    ``flower sesions`` would otherwise be the request "sesions" to ``go``: a paid clarify session and a
    ``.flower/`` and ``runs/`` in the current directory. The message says how to ask it as a task anyway.
    """
    globals_, rest, complete = _split(args)
    if not complete or not rest or rest[0] in COMMANDS or not _WORD.match(rest[0]):
        return None
    word = rest[0]
    suggestion = _WORDS_FOR_COMMANDS.get(word.lower())
    if suggestion is None:
        command = _near_command(word)
        if command is None:
            return None
        suggestion = f"flower {command}"
    anyway = shlex.join(["flower", *globals_, "go", *rest])
    return f"flower: {word!r} is not a command; did you mean {suggestion!r}? To ask it as a task: {anyway}"
