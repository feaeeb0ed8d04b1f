"""From a run dir's data to a `RunReport`: sessions from the transcripts, steps from the manifest, joined."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .model import Mark, RunReport, SessionReport, StepReport, ThreadStats, WorkSplit, share
from .source import RunData, Transcript
from .transcript import thread_stats, within

__all__ = ["build_report"]


def _number(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def _count(value: Any) -> int:
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else 0


def _on_resume(entries: Sequence[Mapping[str, Any]], workspace: Path) -> dict[str, int]:
    """What the store's load-time layers would keep out if the session were resumed now (trimming on).

    Computed, not applied: ``write_spill=False`` writes no spill file, and the stored entries are not touched.
    """
    import flower_stores

    rewritten = flower_stores.rewrite(
        list(entries),
        workspace,
        ephemeral=flower_stores.EphemeralPolicy(),
        trim_policy=flower_stores.TrimPolicy(),
        prune_policy=flower_stores.PrunePolicy(),
        write_spill=False,
    )
    return rewritten.report.as_dict()


def _session(transcript: Transcript, workspace: Path) -> SessionReport:
    workers = [thread_stats(sub.rsplit("/", 1)[-1], entries) for sub, entries in sorted(transcript.workers.items())]
    return SessionReport(
        session_id=transcript.session_id,
        project_key=transcript.project_key,
        main=thread_stats("main", transcript.main),
        workers=workers,
        on_resume=_on_resume(transcript.main, workspace) if transcript.main else {},
    )


def _chain(row: Mapping[str, Any]) -> list[str]:
    """The sessions a step ran in: the ones it retired by handoff, in order, then the live one."""
    retired = [s for s in row.get("retired") or [] if isinstance(s, str)]
    live = row.get("session_id")
    return retired + ([live] if isinstance(live, str) and live and live not in retired else [])


def _step(row: Mapping[str, Any], transcripts: Mapping[str, Transcript]) -> StepReport:
    attempts = _count(row.get("attempts"))
    log = [a for a in row.get("attempt_log") or [] if isinstance(a, Mapping)]
    interrupts = _count(row.get("interrupts"))
    report = StepReport(
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
    )
    _fill_from_transcripts(report, transcripts)
    return report


def _fill_from_transcripts(step: StepReport, transcripts: Mapping[str, Transcript]) -> None:
    """The step's share of its sessions: the entries stamped while it ran (a session can serve several steps)."""
    if not step.started_at or not step.ended_at:
        return
    split = WorkSplit(0, 0, 0, 0, 0, 0, 0)
    mains: list[ThreadStats] = []
    for sid in step.session_ids:
        transcript = transcripts.get(sid)
        if transcript is None:
            continue
        main = thread_stats("main", within(transcript.main, step.started_at, step.ended_at))
        workers = [
            thread_stats(sub, within(entries, step.started_at, step.ended_at))
            for sub, entries in transcript.workers.items()
        ]
        mains.append(main)
        split = split + WorkSplit.of(main, workers)
        step.spilled += main.spilled + sum(w.spilled for w in workers)
        step.spilled_kept_out += main.spilled_kept_out + sum(w.spilled_kept_out for w in workers)
        step.api_errors += main.api_errors + sum(w.api_errors for w in workers)
    step.split = split
    step.cache_hit_ratio = share(sum(m.cache_read_tokens for m in mains), sum(m.context_total for m in mains))
    step.context_peak = max((m.context_peak for m in mains), default=0)
    live = [m for m in mains if m.turns]
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
    sessions = [_session(t, workspace) for t in data.transcripts]
    by_id = {s.session_id: s for s in sessions}
    transcripts = {t.session_id: t for t in data.transcripts}

    steps = [_step(row, transcripts) for row in data.rows]
    for step in steps:
        chain = step.session_ids
        for sid in chain:
            session = by_id.get(sid)
            if session is not None and step.step not in session.steps:
                session.steps.append(step.step)
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
    if not data.has_db:
        notes.append(f"no sessions.db in {data.run_dir}: step numbers come from manifest.json alone")
    elif missing:
        notes.append(
            f"{len(missing)} session(s) named in manifest.json are not in sessions.db: {', '.join(m[:8] for m in missing)}"
        )
    if not data.has_manifest:
        notes.append(f"no manifest.json in {data.run_dir}: sessions without steps, costs or retries")
    unlisted = [s.session_id[:8] for s in sessions if not s.in_manifest]
    if unlisted and data.has_manifest:
        notes.append(
            f"{len(unlisted)} session(s) in sessions.db are in no manifest row (a library run, or another workspace's)"
        )

    # Oldest first: the order the run went through them.
    sessions.sort(key=lambda s: (s.started is None, s.started or 0.0))
    return RunReport(run_dir=str(data.run_dir), steps=steps, sessions=sessions, notes=notes)
