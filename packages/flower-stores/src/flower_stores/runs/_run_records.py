"""Run records: a run's manifest rows and step lineage, kept in the store beside its transcripts.

A run dir keeps these in ``manifest.json`` and ``lineage.json``; a run whose steps move between machines (the
fleet) needs them where every machine reads them, so both stores keep them in tables of their own
(PostgreSQL: schema version 3; SQLite: added on a writable open).

- **Rows** are the manifest's JSON objects, stored as JSON text and returned as they were given. A row is keyed
  by ``(run_id, row["step"], row["started_at"])``: putting a row with the same step and start again replaces it
  (a step's row is rewritten as it goes from in flight to done), a new attempt of the step — a new
  ``started_at`` — adds a row. ``run_rows`` returns them by ``started_at``, then in the order first stored.
- **Lineage** maps a step's name to the session it continues (``lineage.json``'s ``steps``); putting a step
  again replaces its session.
- ``run_ids`` lists every run with a row or a lineage entry, newest first: by the time its first record was
  stored (a run keeps its place while it goes on).

This module holds the rules, the validation and the async surface (worker threads); a backend supplies the
five ``_runs_*`` primitives.
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import anyio.to_thread

from .._shared.json_text import dumps
from .._shared.passthrough import Forward

__all__ = ["EncodedRow", "RunRecordMethods", "RunRecords", "RunRecordsThrough", "encode_rows"]

Row = dict[str, Any]
# What a backend writes per row: (step, started_at, the row as JSON text).
EncodedRow = tuple[str, float, str]


@runtime_checkable
class RunRecords(Protocol):
    """A store that keeps runs' manifest rows and lineage (both flower stores; see the module docstring).

    ``put_run_rows`` upserts rows keyed by ``(run_id, step, started_at)``; ``run_rows`` returns a run's rows
    ordered by ``started_at`` ([] for an unknown run); ``put_lineage`` records which session a step continues;
    ``lineage`` is a run's ``{step: session id}``; ``run_ids`` lists the runs, newest first.
    """

    async def put_run_rows(self, run_id: str, rows: list[Row]) -> None: ...

    def run_rows(self, run_id: str) -> list[Row]: ...

    async def put_lineage(self, run_id: str, step: str, session_id: str) -> None: ...

    def lineage(self, run_id: str) -> dict[str, str]: ...

    def run_ids(self) -> list[str]: ...


def _check_run_id(run_id: object) -> str:
    if not isinstance(run_id, str) or not run_id.strip():
        raise ValueError(f"a run id must be a non-empty string, not {run_id!r}")
    return run_id


def _check_name(what: str, value: object) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{what} must be a non-empty string, not {value!r}")
    return value


def encode_rows(rows: list[Row]) -> list[EncodedRow]:
    """Each row's key and JSON text, or a ValueError naming the first row that cannot be stored.

    Two rows of one batch with the same key: the later wins, as if they had been put one after the other.
    """
    if not isinstance(rows, list):
        raise ValueError(f"rows must be a list of dicts, not {type(rows).__name__}")
    out: dict[tuple[str, float], EncodedRow] = {}
    for n, row in enumerate(rows):
        if not isinstance(row, dict):
            raise ValueError(f"row {n} is a {type(row).__name__}, not a dict (a manifest row)")
        step = row.get("step")
        if not isinstance(step, str) or not step:
            raise ValueError(f"row {n} has no step name (its 'step' is {step!r}); a run row needs one")
        started = row.get("started_at", 0.0)
        if isinstance(started, bool) or not isinstance(started, (int, float)) or not math.isfinite(started):
            raise ValueError(f"row {n} ({step!r}) has started_at {started!r}; it must be a number (epoch seconds)")
        try:
            text = dumps(row)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"row {n} ({step!r}) is not JSON: {exc}") from None
        out[(step, float(started))] = (step, float(started), text)
    return list(out.values())


class RunRecordMethods:
    """`RunRecords` for a backend that supplies the ``_runs_*`` primitives (each one transaction)."""

    def _runs_put_rows(self, run_id: str, rows: list[EncodedRow]) -> None:
        raise NotImplementedError

    def _runs_rows(self, run_id: str) -> list[str]:
        """The run's rows as JSON text, in order."""
        raise NotImplementedError

    def _runs_put_lineage(self, run_id: str, step: str, session_id: str) -> None:
        raise NotImplementedError

    def _runs_lineage(self, run_id: str) -> list[tuple[str, str]]:
        raise NotImplementedError

    def _runs_ids(self) -> list[str]:
        raise NotImplementedError

    async def put_run_rows(self, run_id: str, rows: list[Row]) -> None:
        """Store ``rows`` under ``run_id``: a row with a stored ``(step, started_at)`` replaces it, others are added.

        Raises ValueError for a row without a step name, with a ``started_at`` that is not a number, or that is
        not JSON; nothing of the batch is stored then.
        """
        run_id = _check_run_id(run_id)
        encoded = encode_rows(rows)
        if encoded:
            await anyio.to_thread.run_sync(self._runs_put_rows, run_id, encoded)

    def run_rows(self, run_id: str) -> list[Row]:
        """The run's rows, by ``started_at`` then in the order first stored; [] for a run with none."""
        return [json.loads(text) for text in self._runs_rows(_check_run_id(run_id))]

    async def put_lineage(self, run_id: str, step: str, session_id: str) -> None:
        """Record that ``step`` of the run continues ``session_id`` (replacing the session it continued before)."""
        run_id = _check_run_id(run_id)
        await anyio.to_thread.run_sync(
            self._runs_put_lineage, run_id, _check_name("a step name", step), _check_name("a session id", session_id)
        )

    def lineage(self, run_id: str) -> dict[str, str]:
        """``{step name: session id}`` of the run ({} for a run with none)."""
        return dict(self._runs_lineage(_check_run_id(run_id)))

    def run_ids(self) -> list[str]:
        """Every run with a row or a lineage entry, newest first (by when its first record was stored)."""
        return self._runs_ids()


if TYPE_CHECKING:
    _conforms: type[RunRecords] = RunRecordMethods  # its signatures are the protocol's (checked here)


class RunRecordsThrough:
    """The `RunRecords` methods, straight to the backend (run records are not transcripts: no layer rewrites them)."""

    put_run_rows = Forward(RunRecords.put_run_rows)
    run_rows = Forward(RunRecords.run_rows)
    put_lineage = Forward(RunRecords.put_lineage)
    lineage = Forward(RunRecords.lineage)
    run_ids = Forward(RunRecords.run_ids)
