"""`StoreError`: the one error type of flower-stores, which every other error of the package refines."""

from __future__ import annotations

__all__ = ["StoreError"]


class StoreError(RuntimeError):
    """The session store cannot be opened or used (a bad path or URL, an unreachable server, a missing driver).

    The message is one line that says what is wrong and what to do.
    """
