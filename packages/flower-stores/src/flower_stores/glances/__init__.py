"""`is_ephemeral`: is a Bash command a read-only glance whose result goes stale? One predicate for two answers —
which results the load-time expiry replaces, and which commands a coordinator may run itself.

`_shell` reads a command line into simple commands (refusing what it cannot see statically); `_commands` is the
whitelist, built from `_options` (option rules), `_programs` (``sed``/``awk`` scripts) and `_git`; `_predicate`
applies it to each simple command.
"""

from ._commands import EPHEMERAL_COMMANDS
from ._predicate import is_ephemeral, is_ephemeral_call

__all__ = ["EPHEMERAL_COMMANDS", "is_ephemeral", "is_ephemeral_call"]
