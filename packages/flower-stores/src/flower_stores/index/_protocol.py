"""`SessionIndex`: the questions flower asks a session store beyond the SDK's protocol, as one typed seam.

The Runtime asks whether a session exists (resume or start fresh), whether a message has been mirrored yet
(before it stops a session mid-turn) and how large the latest model call's context was; ``flower doctor`` asks
how much the store holds and where it is. Both stores answer from their indexes without reading payloads;
the layers answer over any backend (`session_index`, in `_computed`). `IndexThrough` passes the questions
straight to a backend that answers them all (the fenced view over one).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from .._shared.errors import StoreError
from .._shared.passthrough import Forward, ForwardValue

__all__ = ["IndexThrough", "QueryNotSupported", "SessionIndex", "answers_index"]


@runtime_checkable
class SessionIndex(Protocol):
    """What flower asks a session store besides the SDK protocol (see the module docstring).

    ``where``: the store as a message names it (a file path, ``postgresql://user@host/db``; never a password).
    ``has_session``: whether the main transcript exists. ``has_entry``: whether the main transcript holds an
    entry with this uuid. ``last_context``: input + cache-read + cache-creation tokens of the latest model call
    among the last ``scan`` entries (0 if none). ``counts``: ``(transcripts, entries)`` — every stored key,
    subagent transcripts included — in the whole store, or in one project.
    """

    @property
    def where(self) -> str: ...

    def has_session(self, project_key: str, session_id: str) -> bool: ...

    def has_entry(self, project_key: str, session_id: str, uuid: str) -> bool: ...

    def last_context(self, project_key: str, session_id: str, scan: int = 60) -> int: ...

    def counts(self, project_key: str | None = None) -> tuple[int, int]: ...


class QueryNotSupported(StoreError, NotImplementedError):  # noqa: N818 - the name says what happened, like NotImplementedError
    """The store cannot answer this question at all (e.g. count a whole store that cannot list its projects)."""


class IndexThrough:
    """The `SessionIndex` questions, straight to a backend that answers them all (see `answers_index`)."""

    where = ForwardValue(SessionIndex.where)
    has_session = Forward(SessionIndex.has_session)
    has_entry = Forward(SessionIndex.has_entry)
    last_context = Forward(SessionIndex.last_context)
    counts = Forward(SessionIndex.counts)


def answers_index(store: object) -> bool:
    """Whether ``store`` answers every `SessionIndex` question itself: a ``where`` string and the four methods."""
    return isinstance(getattr(store, "where", None), str) and all(
        callable(getattr(store, name, None)) for name in ("has_session", "has_entry", "last_context", "counts")
    )
