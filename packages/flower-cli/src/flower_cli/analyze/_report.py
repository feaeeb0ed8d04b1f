"""From a run dir's data to a `RunReport`: sessions from the transcripts, steps from the manifest, joined.

One pass over the sessions, each read, folded into its `SessionReport` and into the steps that ran in it,
and dropped before the next is read: memory follows the largest session, not the store. The report keeps
numbers only (per turn at most), never an entry.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import flower_stores

from ._model import EMPTY_SPLIT, Mark, RunReport, SessionReport, StepReport, ThreadStats, WorkSplit, share
from ._source import RunData, Transcript
from ._transcript import ThreadReader, window_stats

__all__ = ["build_report"]


def _number(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def _count(value: Any) -> int:
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else 0


def _on_resume(entries: Iterable[Mapping[str, Any]], workspace: Path) -> dict[str, int]:
    """What the store's load-time layers would keep out if the session were resumed now (trimming on).

    Computed, not applied: `rewrite_report` gives the full rewrite's report without building the rewritten
    transcript or writing a spill file, and the stored entries are not touched. ``entries`` is read once, as
    they come (see `_session`).
    """
    report = flower_stores.rewrite_report(
        entries,
        workspace,
        ephemeral=flower_stores.EphemeralPolicy(),
        trim_policy=flower_stores.TrimPolicy(),
        prune_policy=flower_stores.PrunePolicy(),
    )
    return report.as_dict()


@dataclass
class _StepPart:
    """What one session did during one step's run: the numbers of its entries stamped inside the window."""

    split: WorkSplit
    spilled: int
    spilled_kept_out: int
    api_errors: int
    # the main thread's, for the step's cache hit ratio, peak and last context
    cache_read: int
    context_total: int
    context_peak: int
    context_last: int
    turns: int


# A step's window onto a session: (position of the step in the manifest, started_at, ended_at).
Window = tuple[int, float, float]


def _session(
    transcript: Transcript, workspace: Path, windows: Sequence[Window]
) -> tuple[SessionReport, dict[int, _StepPart]]:
    """The session's report, and its part in each step whose window is in ``windows`` (by step position).

    The main thread is read in one pass: each entry, as it is parsed, goes through the thread's reader and on
    into the "on resume" estimate (the store's rewrite report), while it is still in the cache — walking a parsed
    transcript again costs about as much as parsing it. ``main`` keeps the entries for the steps' windows.
    """
    reader = ThreadReader("main")
    main_entries: list[Mapping[str, Any]] = []
    on_resume = _on_resume(reader.through(transcript.main, main_entries), workspace)
    main, span = reader.stats, reader.span
    main_parts = {at: window_stats(main, span, main_entries, start, end) for at, start, end in windows}
    if not main_entries:
        on_resume = {}  # no main thread stored (only workers): nothing that a resume would load
    del main_entries  # before the workers are read, not after
    workers: list[ThreadStats] = []
    worker_parts: dict[int, list[ThreadStats]] = {at: [] for at, _, _ in windows}
    for sub, source in transcript.workers:  # one worker's entries at a time
        entries: list[Mapping[str, Any]] = []
        worker_reader = ThreadReader(sub.rsplit("/", 1)[-1])
        for _ in worker_reader.through(source, entries):
            pass
        if not entries:
            continue  # a worker key with nothing stored under it
        worker, worker_span = worker_reader.stats, worker_reader.span
        workers.append(worker)
        for at, start, end in windows:
            worker_parts[at].append(window_stats(worker, worker_span, entries, start, end))
        del entries  # before the next worker is read, not after
    session = SessionReport(
        session_id=transcript.session_id,
        project_key=transcript.project_key,
        main=main,
        workers=workers,
        on_resume=on_resume,
    )
    parts = {
        at: _StepPart(
            split=WorkSplit.of(part, worker_parts[at]),
            spilled=part.spilled + sum(w.spilled for w in worker_parts[at]),
            spilled_kept_out=part.spilled_kept_out + sum(w.spilled_kept_out for w in worker_parts[at]),
            api_errors=part.api_errors + sum(w.api_errors for w in worker_parts[at]),
            cache_read=part.cache_read_tokens,
            context_total=part.context_total,
            context_peak=part.context_peak,
            context_last=part.context_last,
            turns=len(part.turns),
        )
        for at, part in main_parts.items()
    }
    return session, parts


def _chain(row: Mapping[str, Any]) -> list[str]:
    """The sessions a step ran in: the ones it retired by handoff, in order, then the live one."""
    retired = [s for s in row.get("retired") or [] if isinstance(s, str)]
    live = row.get("session_id")
    return retired + ([live] if isinstance(live, str) and live and live not in retired else [])


def _step(row: Mapping[str, Any]) -> StepReport:
    """The manifest's numbers of a step; the transcripts' are filled in by `_fill_from_parts`."""
    attempts = _count(row.get("attempts"))
    log = [a for a in row.get("attempt_log") or [] if isinstance(a, Mapping)]
    interrupts = _count(row.get("interrupts"))
    return StepReport(
        step=str(row.get("step", "")),
        run=str(row.get("run", "")),
        ok=bool(row.get("ok")),
        error=row.get("error") if isinstance(row.get("error"), str) else None,
        session_ids=_chain(row),
        cost_usd=round(_number(row.get("cost_usd")), 6),
        num_turns=_count(row.get("num_turns")),
        attempts=attempts,
        retries=max(attempts - 1, 0),
        resumes=sum(1 for a in log if a.get("resumed")) + interrupts,
        interrupts=interrupts,
        handoffs=len([s for s in row.get("retired") or [] if isinstance(s, str)]),
        context=_count(row.get("context")),
        duration_s=round(_number(row.get("duration_s")), 2),
        started_at=_number(row.get("started_at")),
        ended_at=_number(row.get("ended_at")),
        loads=[dict(load) for load in row.get("loads") or [] if isinstance(load, Mapping)],
        recovered=sum(1 for worker in row.get("recovered") or [] if isinstance(worker, Mapping)),
        budget=dict(row["budget"]) if isinstance(row.get("budget"), Mapping) else None,
    )


def _fill_from_parts(step: StepReport, parts: Mapping[str, _StepPart]) -> None:
    """The step's share of its sessions: the entries stamped while it ran (a session can serve several steps)."""
    found = [parts[sid] for sid in step.session_ids if sid in parts]
    split = EMPTY_SPLIT
    for part in found:
        split = split + part.split
        step.spilled += part.spilled
        step.spilled_kept_out += part.spilled_kept_out
        step.api_errors += part.api_errors
    step.split = split
    step.cache_hit_ratio = share(sum(p.cache_read for p in found), sum(p.context_total for p in found))
    step.context_peak = max((p.context_peak for p in found), default=0)
    live = [p for p in found if p.turns]
    step.context_last = live[-1].context_last if live else 0


def _costs(rows: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Cost per session: each attempt's cost goes to the session it ran in; the rest of a row to its live one."""
    out: dict[str, float] = {}
    for row in rows:
        total = _number(row.get("cost_usd"))
        placed = 0.0
        for attempt in row.get("attempt_log") or []:
            sid = attempt.get("session_id") if isinstance(attempt, Mapping) else None
            if isinstance(sid, str) and sid:
                cost = _number(attempt.get("cost_usd"))
                out[sid] = out.get(sid, 0.0) + cost
                placed += cost
        live = row.get("session_id")
        rest = total - placed
        if isinstance(live, str) and live and rest > 1e-9:
            out[live] = out.get(live, 0.0) + rest
    return out


def build_report(data: RunData, workspace: Path) -> RunReport:
    notes: list[str] = []
    steps = [_step(row) for row in data.rows]
    windows: dict[str, list[Window]] = {}  # session id -> the windows of the steps that ran in it
    for at, step in enumerate(steps):
        if step.started_at and step.ended_at:
            for sid in dict.fromkeys(step.session_ids):
                windows.setdefault(sid, []).append((at, step.started_at, step.ended_at))

    sessions: list[SessionReport] = []
    by_id: dict[str, SessionReport] = {}
    parts: list[dict[str, _StepPart]] = [{} for _ in steps]  # per step: session id -> its part
    for transcript in data.transcripts:
        session, session_parts = _session(transcript, workspace, windows.get(transcript.session_id, ()))
        del transcript  # its entries go before the next session is read, not after
        sessions.append(session)
        by_id[session.session_id] = session
        for at, part in session_parts.items():
            parts[at][session.session_id] = part
    for step, step_parts in zip(steps, parts, strict=True):
        if step.started_at and step.ended_at:
            _fill_from_parts(step, step_parts)

    for step in steps:
        chain = step.session_ids
        for sid in chain:
            ran = by_id.get(sid)
            if ran is not None and step.step not in ran.steps:
                ran.steps.append(step.step)
        for old, new in zip(chain, chain[1:]):
            if old in by_id:
                by_id[old].handoff_to = new
                by_id[old].main.marks.append(Mark("handoff", len(by_id[old].main.turns), f"handed off to {new[:8]}"))
            if new in by_id:
                by_id[new].handoff_from = old
    for sid, cost in _costs(data.rows).items():
        if sid in by_id:
            by_id[sid].cost_usd = round(cost, 6)

    known = {sid for step in steps for sid in step.session_ids}
    for session in sessions:
        session.in_manifest = session.session_id in known
    missing = sorted(known - set(by_id))
    source, db, manifest = data.title or str(data.run_dir), data.db_name, data.rows_name
    if not data.has_db:
        notes.append(f"no {db} in {source}: step numbers come from {manifest} alone")
    elif missing:
        notes.append(
            f"{len(missing)} session(s) named in {manifest} are not in {db}: {', '.join(m[:8] for m in missing)}"
        )
    if not data.has_manifest:
        notes.append(f"no {manifest} in {source}: sessions without steps, costs or retries")
    unlisted = [s.session_id[:8] for s in sessions if not s.in_manifest]
    if unlisted and data.has_manifest:
        notes.append(
            f"{len(unlisted)} session(s) in {db} are in no {data.row_name} (a library run, or another workspace's)"
        )

    # Oldest first: the order the run went through them.
    sessions.sort(key=lambda s: (s.started is None, s.started or 0.0))
    return RunReport(run_dir=source, steps=steps, sessions=sessions, notes=notes)
