"""The SDK's query machinery driven so that a run can be interrupted and closing it early ends the subprocess
(`_SdkStream`), and the close that holds even while the caller is being cancelled (`_close`)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

import anyio

if TYPE_CHECKING:
    from claude_agent_sdk import ClaudeAgentOptions

__all__ = ["QueryFunction"]

logger = logging.getLogger("flower_resilience")

_CLOSE_TIMEOUT_S = 30.0
_INTERRUPT_TIMEOUT_S = 1.0

QueryFunction = Callable[..., AsyncIterator[Any]]  # query(*, prompt, options) -> async iterator of messages


def _closable_sdk_query() -> QueryFunction:
    """``claude_agent_sdk.query``, except that it can be interrupted and that closing it early really ends the
    subprocess (see `_SdkStream`). If the SDK's internals move, fall back to the public ``query``."""
    try:
        from claude_agent_sdk._internal.client import InternalClient  # why: the SDK's internals, guarded
    except ImportError:  # pragma: no cover - a future SDK layout
        import claude_agent_sdk  # why: as above

        return claude_agent_sdk.query

    def query(*, prompt: Any, options: ClaudeAgentOptions) -> AsyncIterator[Any]:
        return _SdkStream(InternalClient().process_query(prompt=prompt, options=options))

    return query


class _SdkStream:
    """The messages of one Claude Code run (the SDK's ``process_query``); ``interrupt()`` and ``aclose()``.

    Why not ``claude_agent_sdk.query``: in 0.2.189 its generator does not propagate ``aclose()``: after it the
    process was still running its tools and writing the transcript. And why interrupt before closing: closing
    stdin alone lets the harness finish its turn during the SDK's grace period (5 s, then SIGTERM). Measured on
    the bundled binary: a close in the middle of a Bash tool call took 6.3 s, 1.2 s after an interrupt; in the
    middle of an in-process MCP tool call (a question waiting for a person) the harness sent the model one more
    request with the failed call's result before it was gone, and none after an interrupt.

    The interrupt is the SDK's own control request (what ``ClaudeSDKClient.interrupt()`` sends), reached on the
    query object of the running generator: ``ClaudeSDKClient`` itself was tried as the driver and, on a loaded
    machine, about one run in ten ended before a background agent's notification turn (never with this one).
    When the SDK's layout moves, ``interrupt()`` says False and closing works as before.
    """

    def __init__(self, generator: Any) -> None:
        self._gen = generator
        self._ended = self._closed = self._interrupted = False

    def __aiter__(self) -> _SdkStream:
        return self

    async def __anext__(self) -> Any:
        if self._closed:
            raise StopAsyncIteration
        try:
            return await self._gen.__anext__()
        except StopAsyncIteration:
            self._ended = True
            raise

    def _query(self) -> Any:
        """The SDK's query object of the running generator (process_query -> its inner generator), or None."""
        frame = getattr(self._gen, "ag_frame", None)
        inner = frame.f_locals.get("inner") if frame is not None else None
        inner_frame = getattr(inner, "ag_frame", None)
        query = inner_frame.f_locals.get("query") if inner_frame is not None else None
        return query if callable(getattr(query, "interrupt", None)) else None

    async def interrupt(self) -> bool:
        """End the harness's turn now, a tool call in flight included (what Esc does in Claude Code). True when
        the harness was told; False when there is nothing to interrupt or it cannot be told."""
        if self._ended or self._closed:
            return False
        if self._interrupted:
            return True
        query = self._query()
        if query is None:
            return False
        # Bounded: when the caller's task is being cancelled, the SDK's reader may already be gone and the
        # harness's acknowledgement never read; the interrupt itself was written by then.
        with anyio.move_on_after(_INTERRUPT_TIMEOUT_S, shield=True):
            try:
                await query.interrupt()
            except Exception:  # stdin already closed (a run without control needs): close as before
                logger.debug("interrupting the harness failed", exc_info=True)
                return False
        self._interrupted = True
        return True

    async def aclose(self) -> None:
        if self._closed:
            return
        with anyio.CancelScope(shield=True):  # also while the caller is being cancelled: the harness must end
            if not self._ended:
                await self.interrupt()
            self._closed = True
            await self._gen.aclose()


async def _close(stream: Any) -> None:
    """End the SDK's generator (and so its subprocess), even while being cancelled."""
    aclose = getattr(stream, "aclose", None)
    if aclose is None:
        return
    with anyio.move_on_after(_CLOSE_TIMEOUT_S, shield=True):
        try:
            await aclose()
        except Exception:
            logger.debug("closing the SDK stream raised", exc_info=True)
