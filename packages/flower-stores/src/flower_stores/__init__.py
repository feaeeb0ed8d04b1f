"""flower-stores: SQLite and PostgreSQL session stores and load-time transcript layers for the Claude Agent SDK.

``SqliteSessionStore`` mirrors transcripts into one SQLite file that several processes can share;
``PostgresSessionStore`` (``pip install 'flower-stores[postgres]'``) into a server a fleet of machines shares.
``TrimmingSessionStore`` / ``PruningSessionStore`` wrap any session store and rewrite only what ``load``
returns — what a resumed session feeds back to the model — never the stored copy. The rewrite steps are
public pure functions (`expire`, `trim`, `prune`, `relink`, `heal_orphans`, `rewrite`) for apps with their
own store; `rewrite_report` gives what `rewrite` would report, without rewriting.

`SessionIndex` is the typed seam for what flower asks a store beyond the SDK protocol (``has_session``,
``has_entry``, ``last_context``, ``counts``, ``where``); the layers answer it over any backend, and
`session_index` gives it for a bare store. The session lease (`Lease`, ``store.acquire_lease(…)``,
`FencedSessionStore`, `hold_lease`) makes one process the driver of a session and fences out a superseded one's
appends; `take_lease` also takes over at once a lease whose holder is a dead process of this machine.
`import_transcript` fills a store's gaps from a session's local JSONL (what the harness wrote that the store
lacks), idempotent by uuid.
`StoreUpkeep` deletes and prunes sessions (never one a live lease holds; a run's lineage only when forced) and
compacts and measures the store.
`RunRecords` (``put_run_rows``, ``run_rows``, ``put_lineage``, ``lineage``, ``run_ids``) keeps runs' manifest rows
and step lineage in the store beside the transcripts, so every machine that reaches the store reads them.
`RunEventLog` (``append_events``, ``read_events``, ``run_heads``, ``live_runs``; `follow_events`) keeps every event a
run publishes (bounded by `bound_event`) and its summary (`RunHead`) there too, and `RunInbox` (``post_message``,
``take_messages``) the answers, mail and stops sent to a run, so another process can watch and steer it.
"""

from ._shared.errors import StoreError
from .backends import (
    PostgresSessionStore,
    SqliteSessionStore,
    StoreUrlError,
    check_store_url,
    describe_store_url,
    is_store_url,
    store_from_url,
)
from .backfill import ImportReport, import_entries, import_transcript, transcript_files
from .entries import INTERRUPT, USER_FEEDBACK, refusal
from .events import InboxMessage, RunEvent, RunEventLog, RunHead, RunInbox, bound_event, follow_events
from .glances import is_ephemeral, is_ephemeral_call
from .index import QueryNotSupported, SessionIndex, session_index
from .layers import PruningSessionStore, TrimmingSessionStore
from .lease import (
    DEFAULT_LEASE_TTL,
    FencedSessionStore,
    Lease,
    LeaseError,
    LeaseHeld,
    LeaseLost,
    LeaseOwner,
    SessionLeases,
    hold_lease,
    is_abandoned,
    take_lease,
)
from .report import LoadReport, Rewritten, trim_report
from .rewrite import (
    EphemeralPolicy,
    PrunePolicy,
    TrimPolicy,
    expire,
    fit,
    heal_orphans,
    history_chars,
    is_api_error,
    is_interrupted,
    prune,
    relink,
    rewrite,
    rewrite_report,
    spill_path,
    trim,
)
from .runs import RunRecords
from .upkeep import Kept, StoreSize, StoreUpkeep, UpkeepPlan, UpkeepResult, UpkeepSession

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_LEASE_TTL",
    "INTERRUPT",
    "USER_FEEDBACK",
    "EphemeralPolicy",
    "FencedSessionStore",
    "ImportReport",
    "InboxMessage",
    "Kept",
    "Lease",
    "LeaseError",
    "LeaseHeld",
    "LeaseLost",
    "LeaseOwner",
    "LoadReport",
    "PostgresSessionStore",
    "PrunePolicy",
    "PruningSessionStore",
    "QueryNotSupported",
    "Rewritten",
    "RunEvent",
    "RunEventLog",
    "RunHead",
    "RunInbox",
    "RunRecords",
    "SessionIndex",
    "SessionLeases",
    "SqliteSessionStore",
    "StoreError",
    "StoreUrlError",
    "TrimPolicy",
    "StoreSize",
    "StoreUpkeep",
    "TrimmingSessionStore",
    "UpkeepPlan",
    "UpkeepResult",
    "UpkeepSession",
    "__version__",
    "bound_event",
    "check_store_url",
    "describe_store_url",
    "expire",
    "heal_orphans",
    "fit",
    "follow_events",
    "history_chars",
    "hold_lease",
    "is_abandoned",
    "import_entries",
    "import_transcript",
    "is_api_error",
    "is_ephemeral",
    "is_ephemeral_call",
    "is_interrupted",
    "is_store_url",
    "prune",
    "refusal",
    "relink",
    "rewrite",
    "rewrite_report",
    "session_index",
    "spill_path",
    "store_from_url",
    "take_lease",
    "transcript_files",
    "trim",
    "trim_report",
]
