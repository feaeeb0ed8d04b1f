"""`is_ephemeral`: is this Bash command a read-only glance whose result goes stale?

One predicate answers two questions, and they must never diverge:

- which Bash results the load-time expiry replaces with "[`cmd` result expired …]";
- which commands a coordinator may run itself instead of dispatching a subagent (flower-cli's glance guard).

If a command were allowed but never expired, its stale output would sit in the context forever; if it
expired but were not allowed, the coordinator would pay a subagent's start-up cost to run ``ls``. So adding
a command here says both things at once.

Because the coordinator runs these unattended, the predicate is a whitelist that errs towards "no": each
simple command of the line (``;``, ``&&``, ``||``, ``|`` and newlines separate them) must be an inspection
verb with no option that writes, executes or never returns, no redirection except to ``/dev/null`` and the
standard streams, and no shell syntax whose effect cannot be seen statically (see `._shell`).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from ._commands import EPHEMERAL_COMMANDS
from ._options import touches_device
from ._shell import Redirect, SimpleCommand, Unsupported, split_commands

__all__ = ["is_ephemeral", "is_ephemeral_call"]

_SAFE_SINKS = {"/dev/null", "/dev/stdout", "/dev/stderr"}


def _redirect_ok(redirect: Redirect) -> bool:
    target = redirect.target
    if target.expands:
        return False
    if redirect.op in (">&", "<&"):
        return target.text.isdigit() or target.text == "-"  # 2>&1, >&2, 2>&-: descriptors, no files
    if redirect.op == "<":
        return not touches_device(target)  # reading a file is fine; a device may never end
    return redirect.op in (">", ">>", "&>", "&>>") and target.text in _SAFE_SINKS


def _simple_command_ok(command: SimpleCommand) -> bool:
    if not all(_redirect_ok(r) for r in command.redirects):
        return False
    head, *args = command.words
    if head.expands or head.quoted or "/" in head.text or "=" in head.text:
        return False  # a path ("./ls"), an assignment ("GIT_EXTERNAL_DIFF=x git diff"), a computed name
    rule = EPHEMERAL_COMMANDS.get(head.text)
    if rule is None:
        return False
    if any(touches_device(w) for w in args):
        return False
    return rule(args)


@functools.lru_cache(maxsize=8192)
def is_ephemeral(cmd: str) -> bool:
    """Whether ``cmd`` is a read-only inspection whose output goes stale (``git status``, ``ls``, ``grep``…).

    ``git status && git diff --stat`` is accepted segment by segment; ``git status && rm -rf x``,
    ``ls\\nrm x``, ``env rm x``, ``git branch new``, ``sort -o f``, ``tail -f log`` and ``find . -delete`` are
    not. Safe redirections (``2>&1``, ``>/dev/null``) are fine; a ``>`` inside quotes is just text.
    """
    if not isinstance(cmd, str) or not cmd.strip():
        return False
    try:
        commands = split_commands(cmd)
    except Unsupported:
        return False
    return bool(commands) and all(_simple_command_ok(c) for c in commands)


def is_ephemeral_call(tool_name: str, tool_input: Mapping[str, Any] | None) -> bool:
    """`is_ephemeral` for a tool call: a foreground ``Bash`` call whose command is a glance.

    This is the one predicate behind both the expiry of stale results and a coordinator's glance permission.
    """
    if tool_name != "Bash" or (
        type(tool_input) is not dict and not isinstance(tool_input, Mapping)
    ):  # dict: skip the ABC check
        return False
    if tool_input.get("run_in_background"):
        return False  # a background shell keeps running: not a glance
    command = tool_input.get("command")
    return isinstance(command, str) and is_ephemeral(command)
