"""`TrimmingSessionStore` and `PruningSessionStore`: the load-time rewrite layered over any session store — a
path, a store URL or any SDK ``SessionStore`` — presenting exactly its backend's methods."""

from ._layered_stores import PruningSessionStore, TrimmingSessionStore

__all__ = ["PruningSessionStore", "TrimmingSessionStore"]
