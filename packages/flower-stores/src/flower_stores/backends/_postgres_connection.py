"""`PostgresConnection`: the PostgreSQL store's pool of connections — opened with one direct connection first (so a
wrong URL says why), the schema created or migrated, every call retried once on a connection that died."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self, TypeVar

from .._shared.errors import StoreError
from ._postgres_schema import SCHEMA_VERSION, schema_steps
from ._postgres_statements import LOCK_SPACE, Statements

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

__all__ = ["EXTRA_HINT", "PostgresConnection", "describe_conninfo", "first_line"]

EXTRA_HINT = "pip install 'flower-stores[postgres]'"
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")

T = TypeVar("T")


def import_driver() -> tuple[Any, Any]:
    try:
        import psycopg  # why: psycopg is an optional extra; SQLite users never import it
        import psycopg_pool
    except ImportError as exc:
        raise StoreError(
            f"the PostgreSQL session store needs the psycopg driver ({exc.name} is not installed): {EXTRA_HINT}"
        ) from None
    return psycopg, psycopg_pool


def describe_conninfo(conninfo: str) -> str:
    """``user@host:port/dbname`` of a libpq URL or ``key=value`` string — never the password."""
    try:
        from psycopg.conninfo import conninfo_to_dict  # why: psycopg is an optional extra

        parts = {k: str(v) for k, v in conninfo_to_dict(conninfo).items() if v is not None}
    except Exception:  # noqa: BLE001 - no driver, or a string libpq rejects: fall back to the URL's own parts
        from urllib.parse import urlsplit  # why: only on this fallback

        try:
            u = urlsplit(conninfo)
            parts = {
                "user": u.username or "",
                "host": u.hostname or "",
                "port": str(u.port or ""),
                "dbname": u.path.lstrip("/"),
            }
        except ValueError:
            return "postgresql://…"
    user = f"{parts['user']}@" if parts.get("user") else ""
    host = parts.get("host") or parts.get("hostaddr") or "localhost"
    port = f":{parts['port']}" if parts.get("port") else ""
    return f"postgresql://{user}{host}{port}/{parts.get('dbname', '')}"


def read_committed(conn: psycopg.Connection[Any]) -> None:
    """Pin READ COMMITTED (every transaction says ``BEGIN ISOLATION LEVEL READ COMMITTED``): the append's
    correctness rests on a fresh snapshot per statement, whatever ``default_transaction_isolation`` the server
    or the role has."""
    import psycopg  # why: psycopg is an optional extra

    conn.isolation_level = psycopg.IsolationLevel.READ_COMMITTED


def read_only_session(conn: psycopg.Connection[Any]) -> None:
    """READ COMMITTED as above, and the server refuses any write on this connection (``flower sessions``)."""
    read_committed(conn)
    conn.execute("SET default_transaction_read_only = on")


def first_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split("\n")[0].split()) or type(exc).__name__
    return text.removeprefix("connection failed: ")


class PostgresConnection:
    """The server ``url``, the ``schema`` the tables live in, and this process's pool (see `PostgresSessionStore`)."""

    def __init__(
        self,
        url: str,
        *,
        schema: str = "flower",
        min_size: int = 1,
        max_size: int = 4,
        connect_timeout: float = 10.0,
        read_only: bool = False,
    ) -> None:
        if not _IDENTIFIER.fullmatch(schema):
            raise StoreError(
                f"schema name {schema!r} is not a plain SQL identifier; use letters, digits and _ (e.g. 'flower')"
            )
        self.url = url
        self.schema = schema
        self.where = describe_conninfo(url)
        self.read_only = read_only
        self._psycopg, pool_module = import_driver()
        self._pool_timeout: type[Exception] = pool_module.PoolTimeout
        self._lock = threading.Lock()
        self._closed = False
        s = f'"{schema}"'
        self._sql = Statements(s)
        self._connect_kwargs: dict[str, Any] = {"autocommit": True}
        if "connect_timeout" not in url:
            self._connect_kwargs["connect_timeout"] = max(1, round(connect_timeout))
        if "application_name" not in url:
            self._connect_kwargs["application_name"] = "flower-stores"  # so a DBA sees who holds a connection
        # One direct connection first: the pool reports a failed connect only as a timeout, and the user needs
        # libpq's own reason (refused, bad password, no such database) to fix it.
        try:
            with self._psycopg.connect(url, **self._connect_kwargs) as conn:
                if read_only:
                    self._check_readable(conn)
                else:
                    self._ensure_schema(conn)
        except self._psycopg.Error as exc:
            raise StoreError(self._connect_problem(exc)) from exc
        self._pool: ConnectionPool = pool_module.ConnectionPool(
            url,
            min_size=min_size,
            max_size=max(max_size, min_size, 1),
            kwargs=self._connect_kwargs,
            open=True,
            name="flower-stores",
            timeout=max(connect_timeout, 30.0),
            configure=read_only_session if read_only else read_committed,
        )

    # --- opening ----------------------------------------------------------------------------------

    def _connect_problem(self, exc: BaseException) -> str:
        reason = first_line(exc)
        lowered = reason.lower()
        if "does not exist" in lowered and "database" in lowered:
            fix = "create it (createdb) or put an existing database in the URL"
        elif "password" in lowered or "authentication" in lowered or "role" in lowered:
            fix = "check the user name and password in the URL"
        elif "permission denied" in lowered:
            fix = f"let this user create schema {self.schema!r}, or have an administrator create it once"
        elif "newer flower-stores" in lowered:
            return reason
        else:
            fix = "check that the server is running and that host, port and database in the URL are right"
        return f"cannot use the PostgreSQL session store at {self.where}: {reason}; {fix} (--store / FLOWER_STORE_URL)"

    def _ensure_schema(self, conn: psycopg.Connection[Any]) -> None:
        """Create or migrate the schema unless it is current; safe when many processes open at once."""
        if self._recorded_version(conn) == SCHEMA_VERSION:
            return  # the common case: one cheap read, no lock, no DDL
        s = self._sql.s
        with conn.transaction():
            # Concurrent CREATE … IF NOT EXISTS can still collide in the catalogs: one opener at a time.
            conn.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (LOCK_SPACE, self.schema))
            conn.execute(f"CREATE SCHEMA IF NOT EXISTS {s}")
            conn.execute(f"CREATE TABLE IF NOT EXISTS {s}.store_info (name text PRIMARY KEY, value text NOT NULL)")
            row = conn.execute(f"SELECT value FROM {s}.store_info WHERE name = 'schema_version'").fetchone()
            found = int(row[0]) if row else 0
            if found > SCHEMA_VERSION:
                raise StoreError(self._too_new(found))
            for version, steps in sorted(schema_steps(s).items()):
                if version > found:
                    for statement in steps:
                        conn.execute(statement)
            conn.execute(
                f"INSERT INTO {s}.store_info (name, value) VALUES ('schema_version', %s) ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                (str(SCHEMA_VERSION),),
            )

    def _check_readable(self, conn: psycopg.Connection[Any]) -> None:
        """Fail at construction, with one clear line, when there is no store of a version this release reads."""
        if self._recorded_version(conn) is None:
            raise StoreError(
                f"no session store at {self.where} (schema {self.schema!r}): nothing was ever written there; "
                "check the URL and the schema (--store / FLOWER_STORE_URL)"
            )

    def _check_writable(self) -> None:
        if self.read_only:
            raise StoreError(
                f"session store {self.where} was opened read-only; open it without read_only=True to write"
            )

    def _recorded_version(self, conn: psycopg.Connection[Any]) -> int | None:
        errors = self._psycopg.errors
        try:
            row = conn.execute(f"SELECT value FROM {self._sql.s}.store_info WHERE name = 'schema_version'").fetchone()
        except (errors.UndefinedTable, errors.InvalidSchemaName):
            return None
        found = int(row[0]) if row else 0
        if found > SCHEMA_VERSION:
            raise StoreError(self._too_new(found))
        return found

    def _too_new(self, found: int) -> str:
        return (
            f"the session store at {self.where} (schema {self.schema!r}) has schema version {found}, written by a newer "
            f"flower-stores (this one knows {SCHEMA_VERSION}); upgrade flower-stores on this machine"
        )

    # --- connections --------------------------------------------------------------------------------

    def _run(self, work: Callable[[psycopg.Connection[Any]], T]) -> T:
        """``work(conn)`` on a pooled connection; once more on a fresh one if the connection died under it.

        A server restart or a dropped network leaves dead connections in the pool, found only when used.
        Retrying is safe: reads are reads, and an append that may have committed is deduplicated on uuid (only
        a uuid-less entry of a batch whose COMMIT was lost in flight could be stored twice — the SDK's own retry
        of a failed batch has the same limit).
        """
        if self._closed:
            raise StoreError(f"session store {self.where} is closed; open a new PostgresSessionStore")
        # Exception classes of a driver imported on first use, named as the driver names them.
        OperationalError, PoolTimeout = self._psycopg.OperationalError, self._pool_timeout  # noqa: N806 - the driver's class names
        for attempt in (1, 2):
            conn: Any = None
            try:
                with self._pool.connection() as conn:
                    return work(conn)
            except OperationalError as exc:
                if attempt == 1 and conn is not None and conn.broken:
                    continue  # the pool drops the dead connection; the next one is new
                raise StoreError(f"the PostgreSQL session store at {self.where} failed: {first_line(exc)}") from exc
            except PoolTimeout as exc:
                raise StoreError(
                    f"no connection to the PostgreSQL session store at {self.where} within {self._pool.timeout:.0f}s: is the server up?"
                ) from exc
        raise AssertionError("unreachable")

    def _read_added(self, query: str, params: tuple[Any, ...]) -> list[Any]:
        """The rows of a read of tables a later schema version added (run records, the run log): none from a
        schema from before them opened read-only (so not migrated)."""
        try:
            return self._run(lambda conn: conn.execute(query, params).fetchall())
        except self._psycopg.errors.UndefinedTable:
            if not self.read_only:
                raise
            return []

    def close(self) -> None:
        """Close every pooled connection. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._pool.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
