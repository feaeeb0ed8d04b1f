"""The two backends: `SqliteSessionStore` (one file several processes share) and `PostgresSessionStore` (a server a
fleet shares), each the SDK's whole ``SessionStore`` protocol plus flower's queries, the lease and run records;
and `store_from_url`, which opens either from one string.

Each backend is its connection (``_sqlite_connection``, ``_postgres_connection``), its lease and run-record
primitives on that (``_sqlite_records``, ``_postgres_records``), and the store on top (``_sqlite``, ``_postgres``).
What both share: the key layout (``_keys``), reading payloads back (``_payloads``), the summary fold (``_summary``).
"""

from ._postgres import PostgresSessionStore
from ._sqlite import SqliteSessionStore
from ._url import StoreUrlError, check_store_url, describe_store_url, is_store_url, store_from_url

__all__ = [
    "PostgresSessionStore",
    "SqliteSessionStore",
    "StoreUrlError",
    "check_store_url",
    "describe_store_url",
    "is_store_url",
    "store_from_url",
]
