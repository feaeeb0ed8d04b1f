"""`resilient_query`: a drop-in for ``claude_agent_sdk.query`` that resumes the same session after a failure.

On a retryable failure — the SDK raising (``ResultError`` after an error result, ``ProcessError``,
``CLIConnectionError``…) or a run ending in an error result with a synthetic "API Error" message — it
classifies the error, waits for the endpoint to answer the (free) probe, and continues the session it already
has with the resume prompt, which carries no error detail. It backs off first unless the probe saw the
endpoint go and come back (then it resumes at once; a rate limit or an overload still waits its backoff). Without a session id it starts over
with the caller's prompt. Synthetic API-error messages never reach the caller (they would end up as
assistant text); they become the attempt's error in the record.

One query can end several turns, each with its own ResultMessage: the harness runs Agent-tool subagents in
the background and wakes the main thread when each finishes. Every successful result is passed through;
an error result is held back and passed on only if it turns out to be the final one. An attempt succeeded
when its last result did; its turns add up, and its cost is the last result's running total.
"""

from __future__ import annotations

import dataclasses
import inspect
import logging
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from ._attempt import _kind, _Live, _session_of, _short, is_synthetic
from ._classify import ErrorKind, http_status, is_pushback, retry_hint
from ._cost import CostMark, mark_of, own_cost, transcript_mark
from ._policy import Resilience, human_wait
from ._probe import _Probing, _wait_online, endpoint
from ._record import Attempt, AttemptRecord, ResilienceError, ResilienceEvent
from ._sdk_stream import QueryFunction, _closable_sdk_query, _close

if TYPE_CHECKING:
    from claude_agent_sdk import ClaudeAgentOptions, Message, ResultMessage

__all__ = ["EventHandler", "QueryFunction", "ResilientQuery", "is_synthetic", "resilient_query"]

logger = logging.getLogger("flower_resilience")

_MISSING_SESSION = "no conversation found with session id"

EventHandler = Callable[[ResilienceEvent], Any]  # sync, or async (returns an awaitable)


class ResilientQuery:
    """The async iterator `resilient_query` returns; ``record`` fills in as the run goes.

    Close it when you stop early (``await q.aclose()``, or ``async with resilient_query(...) as q``): that
    ends the harness subprocess. Closing is idempotent and safe after the end.
    """

    def __init__(
        self,
        *,
        prompt: str | AsyncIterable[dict[str, Any]],
        options: ClaudeAgentOptions | None,
        policy: Resilience | bool | None,
        on_event: EventHandler | None,
        raise_on_failure: bool,
        query_fn: QueryFunction | None,
        probe_target: tuple[str, int] | None,
    ) -> None:
        if isinstance(policy, bool):
            policy = Resilience(enabled=policy)
        self.policy: Resilience = policy or Resilience()
        self.record = AttemptRecord()
        self._prompt = prompt
        self._options = options
        self._on_event = on_event
        self._raise_on_failure = raise_on_failure
        self._query_fn = query_fn
        self._probe_target = probe_target
        self._live: _Live | None = None
        self._stream: AsyncIterator[Any] | None = None  # the live attempt's
        self._stopping = False
        # Each session's running totals as last reported (see ``_cost``): an attempt's own cost is measured
        # from its session's mark. Kept on the object so `cost_so_far` reads the same marks the record does.
        self._marks: dict[str, CostMark] = {}
        self._gen = self._run()

    # --- the async iterator protocol ----------------------------------------------------------------

    def __aiter__(self) -> ResilientQuery:
        return self

    async def __anext__(self) -> Message:
        return await self._gen.__anext__()

    async def aclose(self) -> None:
        await self._gen.aclose()

    async def stop(self) -> bool:
        """End the run now, without a retry: the live attempt's harness is interrupted (its turn ends at once, a
        tool call in flight included), and the iteration ends after the few messages the interruption still
        brings. True when the harness was told; False when the live stream cannot be interrupted (a ``query_fn``
        stand-in without ``interrupt()``, or a run whose harness no longer reads its input): then close the query
        to end it. The record counts the interrupted attempt as closed, not failed.
        """
        self._stopping = True
        interrupt = getattr(self._stream, "interrupt", None)
        if interrupt is None:
            return False
        try:
            return bool(await interrupt())
        except Exception:  # a stand-in's interrupt that fails: the caller closes instead
            logger.debug("interrupting the live attempt failed", exc_info=True)
            return False

    @property
    def cost_so_far(self) -> float:
        """What the run has cost up to now: every concluded attempt's cost plus the turns the live attempt has
        ended so far (its last result's running total, less what a resumed session had cost before it).

        A caller that checks a budget between turns reads it at each ``ResultMessage``, before the run ends
        and the record is complete; the turn still in flight is not in it (the harness reports a turn's cost
        only when the turn ends).
        """
        cost = self.record.cost_usd
        live = self._live
        last = live.last_result if live is not None else None
        if live is not None and last is not None:
            baseline = self._marks.get(live.resumed_from) if live.resumed_from else None
            cost += own_cost(last, baseline)
        return round(cost, 6)

    async def __aenter__(self) -> ResilientQuery:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # --- the loop --------------------------------------------------------------------------------------

    async def _run(self) -> AsyncGenerator[Message, None]:
        import claude_agent_sdk as sdk  # why: the SDK is imported when a run starts, not when flower_resilience is

        original = self._options or sdk.ClaudeAgentOptions()
        query_fn = self._query_fn or _closable_sdk_query()
        marks = self._marks
        dead_sessions: set[str] = set()
        if original.resume:
            # The caller continues an older session: its results will include what that session cost before.
            mark = await transcript_mark(original, original.resume)
            if mark is not None:
                marks[original.resume] = mark

        prompt, options, resumed = self._prompt, original, False
        number = 0
        try:
            while True:
                number += 1
                live = self._live = _Live(number, resumed, self.policy.clock(), options.resume)
                attempt_messages = self._attempt(query_fn, prompt, options, live, sdk)
                try:
                    async for message in attempt_messages:
                        yield message
                finally:
                    # Closed here, not when collected: an early close of this query ends the harness now.
                    await attempt_messages.aclose()

                if self._stopping:  # the caller ended the run (`stop`): what the interruption ended is not a failure
                    self._conclude(live, marks, closed=not live.succeeded)
                    if live.succeeded:
                        self.record.finished = True
                    else:
                        self.record.closed = True
                    return
                attempt = self._conclude(live, marks)
                if live.succeeded:
                    self.record.finished = True
                    return

                error, kind = attempt.error or "", attempt.kind or "unknown"
                await self._emit(
                    "attempt_failed",
                    number,
                    error=error,
                    error_kind=kind,
                    session_id=live.session_id,
                    message=f"attempt {number} failed ({kind}): {_short(error)}",
                )
                lost_session = live.resumed and _MISSING_SESSION in error.lower()
                if lost_session and live.resumed_from:
                    dead_sessions.add(live.resumed_from)
                resumable = next((s for s in reversed(self.record.session_ids) if s not in dead_sessions), None)
                reason = self._why_not_retry(number, kind, lost_session=lost_session, resumable=resumable)
                if reason is None:
                    offline_error = await self._wait_before_retry(live, number, original, error, kind)
                    if offline_error is not None:
                        error, reason = offline_error, "network not back"
                if reason is not None:
                    final = await self._give_up(live, error, kind, reason)
                    if final is not None:
                        yield final  # the final ResultMessage, so "the result ends the stream" keeps holding
                    if self._raise_on_failure:
                        raise ResilienceError(self.record)
                    return
                prompt, options, resumed = await self._next_attempt(number, original, resumable)
        except BaseException:
            # Closed early (GeneratorExit at a yield), cancelled, or an on_event that raised BaseException:
            # the subprocess is already closed by `_attempt`'s finally; the record says how far the run got.
            self._abandon(marks)
            raise

    async def _attempt(
        self, query_fn: QueryFunction, prompt: Any, options: ClaudeAgentOptions, live: _Live, sdk: Any
    ) -> AsyncGenerator[Message, None]:
        """One launch of the harness: the messages the caller should see; what it showed lands in ``live``."""
        stream = self._stream = query_fn(prompt=prompt, options=options)
        try:
            while True:
                try:
                    message = await stream.__anext__()
                except StopAsyncIteration:
                    break
                except Exception as exc:  # noqa: BLE001 - every SDK failure is this attempt's error
                    live.exception = exc
                    break
                if self._take(message, live, sdk):
                    yield message
        finally:
            self._stream = None
            await _close(stream)

    def _why_not_retry(self, number: int, kind: ErrorKind, *, lost_session: bool, resumable: str | None) -> str | None:
        """Why the failed attempt ``number`` is the last one, or None when another follows."""
        policy = self.policy
        if not policy.enabled:
            return "retries are off"
        if number >= policy.max_attempts:
            return f"max_attempts ({policy.max_attempts}) reached"
        if not lost_session and not policy.should_retry(kind):
            return f"{kind} error, not retried"
        if resumable is None and not isinstance(self._prompt, str):
            return "no session to resume and a streamed prompt cannot be replayed"
        return None

    async def _wait_before_retry(
        self, live: _Live, number: int, original: ClaudeAgentOptions, error: str, kind: ErrorKind
    ) -> str | None:
        """Wait for the network, then back off; the final error when the network did not come back in time."""
        policy = self.policy
        probing = await self._wait_for_network(number, original)
        offline_s = round(probing.offline_s, 3)
        if not probing.online:
            host, port = self._target(original) or ("?", 0)
            self._amend(offline_s=offline_s, wait_s=offline_s, probes=probing.probes)
            return (
                f"network not back within {human_wait(policy.max_offline_wait)} "
                f"({host}:{port} unreachable); last error: {error}"
            )
        # After an outage the endpoint is back and nothing asked us to wait: resume at once (the probes' jitter
        # already spreads processes that went offline together). Otherwise back off.
        hint = retry_hint(*live.rate_limits, *live.signals())
        backoff_s = policy.retry_wait(
            number,
            hint,
            offline_for=probing.offline_s if probing.was_down else None,
            pushback=is_pushback(*live.rate_limits, *live.signals()),
        )
        if backoff_s > 0:
            await self._emit(
                "backoff",
                number,
                error=error,
                error_kind=kind,
                wait_s=backoff_s,
                session_id=live.session_id,
                message=f"retrying in {human_wait(backoff_s)}" + (" (as the server asked)" if hint is not None else ""),
            )
            await policy.sleep(backoff_s)
        self._amend(
            offline_s=offline_s, backoff_s=backoff_s, wait_s=round(offline_s + backoff_s, 3), probes=probing.probes
        )
        return None

    async def _next_attempt(
        self, number: int, original: ClaudeAgentOptions, resumable: str | None
    ) -> tuple[Any, ClaudeAgentOptions, bool]:
        """The prompt, options and resumed flag of attempt ``number + 1``: the session resumed, else started over."""
        max_attempts = self.policy.max_attempts
        if resumable is not None:
            await self._emit(
                "resumed",
                number + 1,
                session_id=resumable,
                message=f"resuming session {resumable} (attempt {number + 1} of {max_attempts})",
            )
            return self.policy.resume_prompt, _resume_options(original, resumable), True
        await self._emit(
            "restarted",
            number + 1,
            message=f"starting over with the original prompt (attempt {number + 1} of {max_attempts})",
        )
        return self._prompt, original, False

    def _take(self, message: Any, live: _Live, sdk: Any) -> bool:
        """Note what ``message`` says about the attempt; True if the caller should see it."""
        sid = _session_of(message)
        if sid:
            live.session_id = sid
            self.record._note_session(sid)
        if isinstance(message, sdk.AssistantMessage):
            if is_synthetic(message):
                live.notices.append(message)
                return False
            if message.error is not None:
                live.flagged.append(message)
        elif isinstance(message, sdk.RateLimitEvent):
            live.rate_limits.append(message)
        elif isinstance(message, sdk.ResultMessage):
            live.results.append(message)
            if message.is_error:
                live.held = message
                return False
            live.held = None
        return True

    def _conclude(self, live: _Live, marks: dict[str, CostMark], *, closed: bool = False) -> Attempt:
        """Record the finished (or abandoned) attempt: its error, kind and what it cost."""
        self._live = None
        cost, reported = 0.0, None
        last = live.last_result
        if last is not None:
            # A process's results carry running totals, so the last one holds the whole attempt.
            baseline = marks.get(live.resumed_from) if live.resumed_from else None
            cost = own_cost(last, baseline)
            reported = last.total_cost_usd
            mark = mark_of(last)
            if mark is not None:
                marks[last.session_id] = mark
        failed = not live.succeeded and not closed
        attempt = Attempt(
            number=live.number,
            error=live.describe() if failed else None,
            kind=_kind(live) if failed else None,
            wait_s=0.0,
            resumed=live.resumed,
            session_id=live.session_id,
            cost_usd=round(cost, 6),
            num_turns=sum(r.num_turns or 0 for r in live.results),
            reported_cost_usd=reported,
            status=http_status(*live.signals()) if failed else None,
            api_errors=live.api_errors,
            duration_s=round(max(0.0, self.policy.clock() - live.started), 3),
            closed=closed,
        )
        self.record.attempts.append(attempt)
        return attempt

    def _amend(self, **changes: Any) -> None:
        # The failed attempt is recorded before the wait (so a cancel mid-wait keeps it); the wait lands after.
        self.record.attempts[-1] = dataclasses.replace(self.record.attempts[-1], **changes)

    def _abandon(self, marks: dict[str, CostMark]) -> None:
        live = self._live
        if live is not None:
            # A caller that breaks right after the success ResultMessage has a finished run, not a closed one.
            succeeded = live.succeeded
            self._conclude(live, marks, closed=not succeeded)
            if succeeded:
                self.record.finished = True
                return
        if not self.record.finished:
            self.record.closed = True

    async def _give_up(self, live: _Live, error: str, kind: ErrorKind, reason: str) -> ResultMessage | None:
        """Close the record on a final failure; returns the held error result for the caller to see."""
        self.record.error, self.record.kind, self.record.finished = error, kind, True
        if error != self.record.attempts[-1].error:
            self._amend(error=error)
        tries = len(self.record.attempts)
        await self._emit(
            "gave_up",
            live.number,
            error=error,
            error_kind=kind,
            session_id=self.record.session_id,
            message=f"giving up after {tries} attempt{'s' if tries != 1 else ''} ({reason}): {_short(error)}",
        )
        return live.held

    def _target(self, options: ClaudeAgentOptions) -> tuple[str, int] | None:
        if self._probe_target is not None:
            return self._probe_target
        try:
            return endpoint((options.env or {}).get("ANTHROPIC_BASE_URL") or None)
        except ValueError:
            return None  # a malformed base URL fails the harness itself; there is nothing to probe

    async def _wait_for_network(self, number: int, options: ClaudeAgentOptions) -> _Probing:
        target = self._target(options)
        if target is None:
            return _Probing(online=True, probes=0, offline_s=0.0)

        async def down(message: str) -> None:
            await self._emit("offline", number, message=message)

        async def up(message: str) -> None:
            await self._emit("online", number, message=message)

        return await _wait_online(self.policy, target, down, up)

    async def _emit(self, kind: Any, attempt: int, **fields: Any) -> None:
        if self._on_event is None:
            return
        event = ResilienceEvent(kind=kind, attempt=attempt, **fields)
        try:
            outcome = self._on_event(event)
            if inspect.isawaitable(outcome):
                await outcome
        except Exception:
            logger.exception("on_event raised for %s; continuing", kind)


def _resume_options(options: ClaudeAgentOptions, session_id: str) -> ClaudeAgentOptions:
    # A copy, never the caller's object. The other fields are cleared because they would change what the
    # resume means: continue_conversation picks "the latest" session, session_id (a fixed id for a NEW
    # session) is refused together with resume, and resume_session_at would roll back to the caller's
    # branch point and throw away what the failed attempt did.
    return dataclasses.replace(
        options,
        resume=session_id,
        fork_session=False,
        continue_conversation=False,
        session_id=None,
        resume_session_at=None,
        resume_drops_turn=None,
    )


def resilient_query(
    *,
    prompt: str | AsyncIterable[dict[str, Any]],
    options: ClaudeAgentOptions | None = None,
    policy: Resilience | bool | None = None,
    on_event: EventHandler | None = None,
    raise_on_failure: bool = False,
    query_fn: QueryFunction | None = None,
    probe_target: tuple[str, int] | None = None,
) -> ResilientQuery:
    """``async for message in resilient_query(prompt=..., options=...)`` — `claude_agent_sdk.query`, resumed.

    - ``policy``: a `Resilience` (default ``Resilience()``); ``True``/``False`` mean default/disabled.
    - ``on_event``: called (sync or async) with a `ResilienceEvent` for each failure, outage, wait, resume.
    - ``raise_on_failure``: after the final failure (and its ResultMessage, if any) raise `ResilienceError`
      instead of ending quietly; either way ``.record`` holds every attempt and the final error, and
      ``.record.raise_for_error()`` raises on demand.
    - ``query_fn``: what to call instead of ``claude_agent_sdk.query`` (same keyword signature). The default
      is the SDK's query machinery driven so that closing early ends the subprocess (the SDK's own
      ``query()`` does not propagate ``aclose()``).
    - ``probe_target``: ``(host, port)`` to probe while offline; default `endpoint()` of
      ``options.env["ANTHROPIC_BASE_URL"]`` or the environment's.

    The caller's ``options`` are never modified; a resume uses a copy with ``resume=<session id>``.
    """
    return ResilientQuery(
        prompt=prompt,
        options=options,
        policy=policy,
        on_event=on_event,
        raise_on_failure=raise_on_failure,
        query_fn=query_fn,
        probe_target=probe_target,
    )
