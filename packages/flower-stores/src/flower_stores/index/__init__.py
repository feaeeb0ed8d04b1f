"""`SessionIndex`: what flower asks a session store beyond the SDK's protocol (does a session exist, has an entry
been mirrored, how large was the last context, how much is stored, where is it) — the protocol and
`IndexThrough` (`_protocol`), and `session_index`, which answers it over any store (`_computed`)."""

from ._computed import run_sync, session_index
from ._protocol import IndexThrough, QueryNotSupported, SessionIndex, answers_index

__all__ = ["IndexThrough", "QueryNotSupported", "SessionIndex", "answers_index", "run_sync", "session_index"]
