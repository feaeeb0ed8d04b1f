"""flower-stores: a SQLite session store and load-time transcript layers for the Claude Agent SDK.

``SqliteSessionStore`` mirrors transcripts into one SQLite file that several processes can share.
``TrimmingSessionStore`` / ``PruningSessionStore`` wrap any session store and rewrite only what ``load``
returns — what a resumed session feeds back to the model — never the stored copy. The rewrite steps are
public pure functions (`expire`, `trim`, `prune`, `relink`, `heal_orphans`, `rewrite`) for apps with their
own store.
"""

from ._chain import heal_orphans, relink
from ._ephemeral import is_ephemeral, is_ephemeral_call
from ._expire import expire
from ._layers import PruningSessionStore, TrimmingSessionStore
from ._policies import EphemeralPolicy, PrunePolicy, TrimPolicy
from ._prune import is_api_error, is_interrupted, prune
from ._report import LoadReport, trim_report
from ._rewrite import rewrite
from ._rewritten import Rewritten
from ._sqlite import SqliteSessionStore, StoreError
from ._trim import spill_path, trim

__version__ = "0.1.0"

__all__ = [
    "EphemeralPolicy",
    "LoadReport",
    "PrunePolicy",
    "PruningSessionStore",
    "Rewritten",
    "SqliteSessionStore",
    "StoreError",
    "TrimPolicy",
    "TrimmingSessionStore",
    "__version__",
    "expire",
    "heal_orphans",
    "is_api_error",
    "is_ephemeral",
    "is_ephemeral_call",
    "is_interrupted",
    "prune",
    "relink",
    "rewrite",
    "spill_path",
    "trim",
    "trim_report",
]
