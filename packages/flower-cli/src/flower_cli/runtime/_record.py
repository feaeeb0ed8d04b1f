"""What a Runtime records: this process's `StepResult`s, their rows in ``manifest.json``, and how one launch's
attempts (flower-resilience's record) add up into a step's result.

Why a module of its own: every way a step ends — its own end, a stop, a signal, a crash of the caller — must
leave its row in the manifest, and the arithmetic of a step's cost and attempts must be the same for the
streamed launches and the quiet handoff-writing round.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from pathlib import Path
from typing import Any

from ._manifest import Manifest
from ._result import StepResult

__all__ = ["INTERRUPTED", "KILLED", "RunRecord", "absorb", "new_run_id", "step_payload"]

INTERRUPTED = "interrupted-by-human"
KILLED = "killed-by-signal"


def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]


class RunRecord:
    """This process's results and their manifest rows (keyed by ``run_id``; other processes' rows are kept).

    ``current`` is the step running now, so that `rescue` can record it from a signal handler.
    """

    def __init__(self, run_dir: Path, run_id: str) -> None:
        self.run_id = run_id
        self.manifest = Manifest(run_dir / "manifest.json")
        self.results: list[StepResult] = []
        # The last failed manifest write (a full or read-only disk), kept instead of raised: see write.
        self.manifest_error: OSError | None = None
        self.current: StepResult | None = None
        self.limit_warnings: set[str] = set()  # the usage limits a warning was said for (each once per process)

    def begin(self, result: StepResult) -> None:
        self.current = result

    def close(self, result: StepResult) -> None:
        """The step of ``result`` is over: it joins the results and the manifest is written."""
        self.current = None
        if result not in self.results:  # rescue() may have recorded it already
            self.results.append(result)
        self.write()

    def rescue(self, reason: str | None = None) -> None:
        """Record the in-flight step (SIGTERM/SIGHUP/Ctrl-C path): it must not vanish from the manifest."""
        current = self.current
        if current is None or current.ended_at:
            return
        current.ended_at = time.time()
        current.ok = False
        current.error = reason or current.error or KILLED
        if current not in self.results:
            self.results.append(current)
        try:
            self.write(lock_timeout=2.0)
        except OSError:
            pass  # a dying process cannot do better; the stores already hold the transcript

    def write(self, *, lock_timeout: float | None = None) -> None:
        rows = [r.row(self.run_id) for r in self.results]
        try:
            self.manifest.write(self.run_id, rows, lock_timeout=lock_timeout)
        except OSError as exc:
            # A step that ran must still return its result (the answer may be hours of work) when only its
            # record cannot be written; the previous manifest stays intact (atomic replace) and the next
            # write retries every row of this run. Callers check `manifest_error`; the CLI exits 3 on it.
            self.manifest_error = exc
        else:
            self.manifest_error = None

    def total_cost(self) -> float:
        return round(sum(r.cost_usd for r in self.results), 4)


def absorb(result: StepResult, record: Any) -> None:
    """Fold one resilient_query's attempt record into the step's result (costs and turns add up).

    An attempt the Runtime itself closed (a human interrupt) is not a failure and is not counted.
    """
    counted = [a for a in record.attempts if not a.closed]
    result.attempts += len(counted)
    result.cost_usd = round(result.cost_usd + float(record.cost_usd or 0.0), 6)
    result.num_turns += int(record.num_turns or 0)
    result.resumed = result.resumed or bool(record.resumed)
    result.ok = bool(record.ok)
    result.error = record.error
    result.errors.extend(record.errors)
    result.attempt_log.extend(dataclasses.asdict(a) for a in record.attempts)
    if record.session_id:
        result.session_id = record.session_id


def step_payload(result: StepResult) -> dict[str, Any]:
    """The payload of a step's one ``result`` event."""
    return {
        "step": result.step,
        "session_id": result.session_id,
        "ok": result.ok,
        "is_error": not result.ok,
        "cost_usd": result.cost_usd,
        "num_turns": result.num_turns,
        "turns": result.turns,
        "text": result.text,
        "error": result.error,
        "workers": result.workers,
        "retired": result.retired,
        "duration_s": result.duration_s,
        "budget": result.budget,  # the run's budget when the step ended (None without one): a page shows it
    }
