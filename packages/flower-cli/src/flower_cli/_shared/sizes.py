"""Byte counts as people read them (``flower doctor``, ``flower sessions prune``)."""

from __future__ import annotations

__all__ = ["human_bytes"]

_SCALES = (("GB", 1 << 30), ("MB", 1 << 20), ("kB", 1 << 10))


def human_bytes(n: int) -> str:
    """``1536`` → ``1.5 kB``; binary multiples, one decimal; under a kilobyte, whole bytes."""
    for unit, scale in _SCALES:
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"
