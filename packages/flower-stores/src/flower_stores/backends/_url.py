"""`store_from_url`: one string names a session store — ``sqlite:///path/sessions.db`` or ``postgresql://…``.

The CLI's ``--store URL`` / ``FLOWER_STORE_URL`` and ``Runtime(store="…")`` go through here, so a malformed URL
(`StoreUrlError`, a usage mistake) is told apart from a well-formed one that does not work (`StoreError`: the
server refuses, the password is wrong, the driver is not installed — the environment needs fixing).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from .._shared.errors import StoreError
from ._postgres import PostgresSessionStore
from ._postgres_connection import describe_conninfo
from ._sqlite import SqliteSessionStore

__all__ = ["StoreUrlError", "check_store_url", "describe_store_url", "is_store_url", "store_from_url"]

_SQLITE = "sqlite://"
_POSTGRES = ("postgresql://", "postgres://")
_EXAMPLES = (
    "sqlite:///abs/path/sessions.db, sqlite://relative/sessions.db or postgresql://user:password@host:5432/dbname"
)


class StoreUrlError(StoreError, ValueError):
    """The store URL itself is malformed (unknown scheme, no path, a bad port): fix the string."""


def is_store_url(value: object) -> bool:
    """Whether ``value`` is a string naming a store by URL (rather than a path to a sessions.db)."""
    return isinstance(value, str) and value.lower().startswith((_SQLITE, *_POSTGRES))


def _sqlite_path(url: str) -> Path:
    rest = url[len(_SQLITE) :]
    if not rest.strip():
        raise StoreUrlError(f"store URL {url!r} names no file; give one, e.g. {_EXAMPLES}")
    return Path(rest).expanduser()


def _check_postgres(url: str) -> None:
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number in range
    except ValueError as exc:
        raise StoreUrlError(f"store URL {describe_store_url(url)!r} is malformed ({exc}); e.g. {_EXAMPLES}") from None
    try:
        from psycopg.conninfo import conninfo_to_dict  # why: psycopg is an optional extra
    except ImportError:
        return  # the store itself reports the missing driver, with the fix
    try:
        conninfo_to_dict(url)
    except Exception as exc:  # noqa: BLE001 - libpq's parser: any complaint means the string is malformed
        raise StoreUrlError(
            f"store URL {describe_store_url(url)!r} is malformed: {' '.join(str(exc).split())}; e.g. {_EXAMPLES}"
        ) from None


def check_store_url(url: str) -> Path | None:
    """Check ``url`` without opening anything: the SQLite file it names, or None for a server store.

    Raises `StoreUrlError` if it is malformed (unknown scheme, no file, a bad port or option).
    """
    if not isinstance(url, str) or not url.strip():
        raise StoreUrlError(f"the store URL is empty; give one, e.g. {_EXAMPLES}")
    url = url.strip()
    lowered = url.lower()
    if lowered.startswith(_SQLITE):
        return _sqlite_path(url)
    if lowered.startswith(_POSTGRES):
        _check_postgres(url)
        return None
    scheme = url.split("://", 1)[0] if "://" in url else ""
    what = f"unknown scheme {scheme!r}" if scheme else "not a URL"
    raise StoreUrlError(f"store URL {describe_store_url(url)!r}: {what}; use {_EXAMPLES}")


def describe_store_url(url: str) -> str:
    """The URL as it may be shown: the password, if any, left out."""
    lowered = url.lower()
    if lowered.startswith(_POSTGRES):
        return describe_conninfo(url)
    return re.sub(r"(://[^/@:]*):[^/@]*@", r"\1:***@", url)  # any other scheme: hide a password all the same


def store_from_url(url: str, **options: Any) -> SqliteSessionStore | PostgresSessionStore:
    """Open the store ``url`` names; ``options`` go to the backend's constructor.

    ``sqlite:///abs/path.db`` (three slashes: an absolute path) or ``sqlite://rel/path.db`` (relative to the
    current directory) opens a `SqliteSessionStore`; ``postgresql://…`` (or ``postgres://…``, any libpq URL)
    a `PostgresSessionStore`. Raises `StoreUrlError` for a malformed URL and `StoreError` for one that does
    not work (no server, wrong password, the ``postgres`` extra not installed).
    """
    path = check_store_url(url)
    if path is not None:
        return SqliteSessionStore(path, **options)
    return PostgresSessionStore(url.strip(), **options)
