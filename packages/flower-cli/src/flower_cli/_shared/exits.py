"""The ``flower`` command's exit codes, and the one exception commands raise to leave with one."""

from __future__ import annotations

from enum import IntEnum

__all__ = ["Exit", "ExitCode"]


class ExitCode(IntEnum):
    DONE = 0
    NOT_DONE = 1  # the run stopped without reaching its goal; the reason is printed
    USAGE = 2
    # credentials or configuration: what a person must fix before a rerun can work (the credential, a .env,
    # the workspace or run dir, a store that is not a database, a full disk)
    CONFIG = 3
    OFFLINE = 4  # the network did not come back within the offline limit
    LIMITED = 5  # a usage limit not waited out (its reset is beyond --limit-wait) or a spend cap
    BUDGET = 6  # the run's budget is spent (--budget / FLOWER_BUDGET); a wake with a higher one continues it
    INTERRUPTED = 130


class Exit(Exception):  # noqa: N818 - the name says what raising it does
    """Leave the command with ``code`` after printing ``message`` (one line, says what to do) on stderr."""

    def __init__(self, code: ExitCode, message: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.message = message
