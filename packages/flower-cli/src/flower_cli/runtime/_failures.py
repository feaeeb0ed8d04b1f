"""What a user can cause or fix, said in one line with its exit code — never as a traceback.

Trouble with the files flower keeps (the workspace, the run dir, its session store, a full disk, the user
.env) and with credentials reaches a caller as an exception rather than as a failed step. `explain` turns each
into (exit code, message); anything else is a bug in flower and keeps its traceback. The command line's usage
errors are explained beside its parser (`flower_cli.cli`).

Imported only on an error path, so it may import what it needs.
"""

from __future__ import annotations

import errno
import sqlite3
from pathlib import Path

from .._shared.exits import ExitCode

__all__ = ["describe_os_error", "describe_store_error", "explain"]

_NO_SPACE = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}
_NOT_A_DIRECTORY = {errno.ENOTDIR, errno.EEXIST}
_NOT_ALLOWED = {errno.EACCES, errno.EPERM}


def describe_os_error(exc: OSError, what: str = "", *, elsewhere: str = "point -w/-r elsewhere") -> str:
    """One line for a failed file operation: which path, what is wrong with it, what to do.

    ``elsewhere`` is the way around it for this command (for the run files: other -w/-r paths).
    """
    where = exc.filename if exc.filename is not None else what or "a file"
    place = f"{what} {where}" if what and exc.filename is not None else str(where)
    reason = exc.strerror or str(exc)
    if exc.errno in _NO_SPACE:
        return f"no space left for {place} ({reason}): free some space on that disk or {elsewhere}, then run again"
    if exc.errno == errno.EROFS:
        return f"{place} is on a read-only file system: {elsewhere}"
    if exc.errno in _NOT_ALLOWED:
        return f"no permission to write {place} ({reason}): fix its permissions or {elsewhere}"
    if exc.errno in _NOT_A_DIRECTORY:
        return f"{place} (or a folder above it) is a file, not a directory: move that file or {elsewhere}"
    if exc.errno == errno.ENOENT:
        return f"{place} does not exist ({reason}): create it or {elsewhere}"
    return f"cannot use {place} ({reason}): {elsewhere}"


def describe_store_error(exc: BaseException, db: Path | None = None) -> str:
    """One line for a session store that cannot be used; the file itself is never touched."""
    cause = exc if isinstance(exc, sqlite3.Error) else exc.__cause__
    if isinstance(cause, OSError):
        return describe_os_error(cause, "the session store")
    name = str(getattr(cause, "sqlite_errorname", "")) if isinstance(cause, sqlite3.Error) else ""
    if not isinstance(cause, (sqlite3.Error, OSError)) and not isinstance(exc, sqlite3.Error):
        # The store's own message (a PostgreSQL server refusing, a file that is no session store, a store
        # opened read-only): it names the store and says what to do already.
        return _one_line(str(exc))
    place = str(db) if db is not None else "the session store"
    reason = str(cause) if isinstance(cause, sqlite3.Error) else _one_line(str(exc))
    if name.startswith(("SQLITE_NOTADB", "SQLITE_CORRUPT")):
        # A stray or half-copied file: refuse it rather than replace it — it may be the only copy of sessions.
        return (
            f"{place} is not a usable SQLite database ({reason}); flower left it as it is. Move it away "
            "(flower then starts a new store) or point -r at another run dir."
        )
    if name.startswith("SQLITE_FULL"):
        return f"no space left for {place} ({reason}): free some space on that disk (or point -r at another one), then run again"
    if name.startswith(("SQLITE_READONLY", "SQLITE_CANTOPEN", "SQLITE_PERM", "SQLITE_AUTH")):
        return f"cannot write {place} ({reason}): make its folder writable or point -r at another run dir"
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        return f"{place} stayed locked by another process ({reason}): wait for it to finish, then run again"
    if name.startswith("SQLITE_IOERR"):
        return f"reading or writing {place} failed ({reason}): check that disk (space, errors), then run again"
    return f"cannot use {place}: {reason}"


def explain(
    exc: BaseException, *, store: Path | None = None, elsewhere: str = "point -w/-r elsewhere"
) -> tuple[ExitCode, str] | None:
    """(exit code, one line) for trouble a user can cause or fix; None for a bug (keep its traceback).

    ``store`` names the session store when the caller knows it (SQLite's own errors do not say which file);
    ``elsewhere`` is the way around a file problem for this command. The command line's own usage errors are
    `flower_cli.cli`'s to explain (it knows the parser).
    """
    if _is_session_busy(exc):  # another process drives the session: its message names it and says what to do
        return ExitCode.CONFIG, _one_line(str(exc))
    if _is_store_url_error(exc):  # a malformed --store / FLOWER_STORE_URL: the string typed is wrong
        return ExitCode.USAGE, _one_line(str(exc))
    if isinstance(exc, sqlite3.Error) or _is_store_error(exc):
        return ExitCode.CONFIG, describe_store_error(exc, store)
    if _is_env_file_error(exc):
        return ExitCode.CONFIG, _one_line(str(exc))
    if isinstance(exc, OSError):
        return ExitCode.CONFIG, describe_os_error(exc, elsewhere=elsewhere)
    from ._runtime import CredentialsError  # lazy: the Runtime loads the SDK; `flower store` and usage errors do not

    if isinstance(exc, CredentialsError):
        return ExitCode.CONFIG, str(exc)
    return None


def _is_session_busy(exc: BaseException) -> bool:
    from ._session_lease import SessionBusy  # lazy: it loads flower_stores (and the SDK), asked only on an error

    return isinstance(exc, SessionBusy)


def _is_store_error(exc: BaseException) -> bool:
    import flower_stores  # lazy: it loads the SDK, asked only on an error

    return isinstance(exc, flower_stores.StoreError)


def _is_store_url_error(exc: BaseException) -> bool:
    import flower_stores  # lazy: it loads the SDK, asked only on an error

    return isinstance(exc, flower_stores.StoreUrlError)


def _is_env_file_error(exc: BaseException) -> bool:
    import flower_env  # lazy: asked only on an error; importing this module stays light

    return isinstance(exc, flower_env.EnvFileError)


def _one_line(text: str) -> str:
    return " ".join(text.split())
