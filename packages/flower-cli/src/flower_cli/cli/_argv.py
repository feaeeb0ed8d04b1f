"""Rewrite the command line so that ``flower "build X"`` means ``flower go "build X"`` and global flags work
before or after the subcommand (``flower once -v "hi"`` = ``flower -v once "hi"``)."""

from __future__ import annotations

__all__ = ["COMMANDS", "GLOBAL_FLAGS", "GLOBAL_VALUED", "rewrite_argv"]

COMMANDS = ("go", "once", "run", "setup", "doctor", "sessions", "analyze")
GLOBAL_VALUED = ("-w", "--workspace", "-r", "--run-dir", "--store", "--color")
GLOBAL_FLAGS = ("-v", "--verbose", "-W", "--workbench", "-T", "--trim", "--json")


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


def rewrite_argv(args: list[str]) -> list[str]:
    """Global options first, then the subcommand (``go`` when none is named), then the rest."""
    globals_: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(args):
        if args[i] == "--":
            rest.extend(args[i:])
            break
        width = _global_width(args, i)
        if width == 1 and args[i] in GLOBAL_VALUED:
            # `flower once hi -w`: the value is missing. Moved in front of the command, -w would take the
            # command for its value; alone, it makes the parser say exactly what is wrong.
            return [*globals_, args[i]]
        if width:
            globals_.extend(args[i : i + width])
            i += width
        else:
            rest.append(args[i])
            i += 1
    if not rest:
        return globals_ if {"-h", "--help"} & set(args) else globals_ + ["go"]
    if rest[0] in ("-h", "--help", "--version"):
        return globals_ + rest
    if rest[0] not in COMMANDS:
        rest = ["go", *rest]
    return globals_ + rest
