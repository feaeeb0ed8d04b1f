"""flower-resilience: free network probes, honest error classification, resume-instead-of-restart, and a
tether that ends Claude Code (and all it started) when the app that started it dies.

Importing this package does not import ``claude_agent_sdk`` (slow to import); the wrapper imports it when a
run starts.
"""

from ._classify import ErrorKind, classify, http_status, is_pushback, retry_hint
from ._launcher import default_cli_path, is_tethered, tether, tethered_cli_path
from ._limits import LIMIT_RETRY_FLOOR_S, LimitKind, UsageLimit, limit_from_headers, span_text, until_text, usage_limit
from ._policy import RESUME_PROMPT, Resilience, human_wait
from ._probe import DEFAULT_BASE_URL, Notify, endpoint, reachable, reachable_sync, unreachable_reason, wait_online
from ._query import EventHandler, QueryFunction, ResilientQuery, is_synthetic, resilient_query
from ._record import Attempt, AttemptRecord, EventKind, ResilienceError, ResilienceEvent

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_BASE_URL",
    "LIMIT_RETRY_FLOOR_S",
    "RESUME_PROMPT",
    "Attempt",
    "AttemptRecord",
    "ErrorKind",
    "EventHandler",
    "EventKind",
    "LimitKind",
    "Notify",
    "QueryFunction",
    "Resilience",
    "ResilienceError",
    "ResilienceEvent",
    "ResilientQuery",
    "UsageLimit",
    "__version__",
    "classify",
    "default_cli_path",
    "endpoint",
    "http_status",
    "human_wait",
    "is_pushback",
    "is_synthetic",
    "is_tethered",
    "limit_from_headers",
    "reachable",
    "reachable_sync",
    "resilient_query",
    "retry_hint",
    "span_text",
    "tether",
    "tethered_cli_path",
    "unreachable_reason",
    "until_text",
    "usage_limit",
    "wait_online",
]
