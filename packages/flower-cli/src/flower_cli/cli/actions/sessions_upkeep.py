"""``flower sessions delete ID… | prune --older-than 30d | compact [--full]``: keeping the store manageable.

The rules are flower-stores' `StoreUpkeep`: a session a live lease holds is never deleted; a session a run's
lineage names (the run dir's ``lineage.json``, or the store's own run records) only with ``--force``, and then
the command says which wake will start afresh. This module turns those plans into lines (or one ``--json``
document) and exit codes: a ``delete`` that could not delete every session it was given exits 1, as does a
``compact`` refused because runs are live.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import anyio

import flower_stores

from ..._shared.durations import seconds_in
from ..._shared.exits import Exit, ExitCode
from ..._shared.sizes import human_bytes
from ...runtime import Lineage
from .output import write_stdout
from .session_ids import resolve_session
from .store import explained, open_store, store_label

if TYPE_CHECKING:
    from flower_stores import Kept, StoreSize, UpkeepPlan, UpkeepResult, UpkeepSession

    from .._global_options import GlobalOptions

__all__ = ["compact_store", "delete_sessions", "parse_age", "prune_sessions"]

_AGE_UNITS = {unit: unit for unit in "smhdw"}  # a unit is required: "30" alone says nothing of what it counts


def parse_age(text: str) -> float:
    """``30d`` → seconds (units s, m, h, d, w); a usage `Exit` that shows the form for anything else."""
    seconds = seconds_in(text or "", _AGE_UNITS)
    if seconds is None:
        raise Exit(ExitCode.USAGE, f"--older-than {text!r}: give an age like 30d, 12h, 90m or 2w (s, m, h, d, w)")
    return seconds


def _project_key(opts: GlobalOptions) -> str:
    # why: the SDK's import costs most of a second, and `flower sessions --help` must not pay it
    from claude_agent_sdk import project_key_for_directory

    return project_key_for_directory(str(opts.workspace))


@contextmanager
def _upkeep(opts: GlobalOptions) -> Iterator[flower_stores.StoreUpkeep]:
    """The upkeep of this run dir's store, knowing what the run dir's lineage needs for a wake; store trouble
    inside the block becomes a one-line `Exit` (``explained``), and the store is closed after it."""
    db = opts.run_dir / "sessions.db"
    if not opts.store and not db.exists():
        raise Exit(ExitCode.USAGE, f"no {db}: nothing has run in this run dir yet (use -w/-r to point at another).")
    lineage = Lineage.open(opts.run_dir, opts.workspace)
    needed = {
        sid: f"step {step!r} of {lineage.path} continues it (a wake would resume it)"
        for step, sid in lineage.steps.items()
    }
    store = open_store(opts)
    try:
        yield flower_stores.StoreUpkeep(store, needed=needed)
    except Exit:
        raise
    except Exception as exc:
        raise explained(exc, opts) from exc
    finally:
        store.close()


def _session_row(session: UpkeepSession) -> dict[str, Any]:
    return {
        "session_id": session.session_id,
        "project_key": session.project_key,
        "modified": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(session.mtime_ms / 1000)),
        "mtime_ms": session.mtime_ms,
        "bytes": session.payload_bytes,
    }


def _kept_row(kept: Kept) -> dict[str, Any]:
    return {**_session_row(kept.session), "reason": kept.reason, "forceable": kept.forceable}


def _report(opts: GlobalOptions, kind: str, plan: UpkeepPlan, done: UpkeepResult | None) -> None:
    """What a plan would do (``done`` None: a dry run) or what it did, as lines or one JSON document."""
    gone = plan.delete if done is None else done.deleted
    kept = plan.kept if done is None else done.kept  # apply's: with sessions a lease took after the plan
    forced = [k for k in plan.forced if k.session in gone]
    if opts.json:
        document = {
            "kind": kind,
            "store": store_label(opts),
            "dry_run": done is None,
            "deleted": [_session_row(s) for s in gone],
            "bytes": sum(s.payload_bytes for s in gone),
            "kept": [_kept_row(k) for k in kept],
            "forced": [_kept_row(k) for k in forced],
        }
        write_stdout(json.dumps(document, ensure_ascii=False) + "\n")
        return
    verb = "would delete" if done is None else "deleted"
    for session in gone:
        modified = _session_row(session)["modified"]
        write_stdout(f"{verb} {session.session_id}  {modified}  {human_bytes(session.payload_bytes)}\n")
    for k in forced:
        write_stdout(f"  forced {k.session.session_id}: {k.reason}; the next wake there starts a new session\n")
    for k in kept:
        hint = " (--force deletes it)" if k.forceable else ""
        write_stdout(f"kept {k.session.session_id}: {k.reason}{hint}\n")
    total = human_bytes(sum(s.payload_bytes for s in gone))
    if done is None:
        write_stdout(f"dry run: {len(gone)} session(s), {total} of transcripts, would go; nothing was deleted\n")
    else:
        write_stdout(
            f"{len(gone)} session(s) deleted, {total} of transcripts; "
            "`flower sessions compact` gives the space back to the disk\n"
        )


def _run_plan(
    opts: GlobalOptions, kind: str, make_plan: Callable[[flower_stores.StoreUpkeep], UpkeepPlan], dry_run: bool
) -> tuple[Kept, ...]:
    """Make the plan, apply it unless ``dry_run``, report; the sessions kept."""
    with _upkeep(opts) as upkeep:
        plan = make_plan(upkeep)
        done = None if dry_run else anyio.run(upkeep.apply, plan)
    _report(opts, kind, plan, done)
    return plan.kept if done is None else done.kept


def delete_sessions(opts: GlobalOptions, given: list[str], *, dry_run: bool, force: bool) -> None:
    """Delete these sessions (full ids or unique prefixes), each with its workers' transcripts; exit 1 when one
    of them was kept (a live run drives it, or a run's lineage names it and ``force`` was not given)."""
    project = _project_key(opts)
    where = f"for {opts.workspace} in {store_label(opts)}"

    def plan(upkeep: flower_stores.StoreUpkeep) -> UpkeepPlan:
        ids = [resolve_session(upkeep.store, project, g, where=where) for g in given]  # each runs its own event loop
        return anyio.run(lambda: upkeep.plan_delete(ids, project_key=project, force=force))

    kept = _run_plan(opts, "sessions-delete", plan, dry_run)
    if kept:
        fixes = []
        if any(k.forceable for k in kept):
            fixes.append("--force deletes those a run's lineage names")
        if not all(k.forceable for k in kept):
            fixes.append("one a live run drives can be deleted once that run ends")
        verb = "would be kept" if dry_run else "kept"
        raise Exit(ExitCode.NOT_DONE, f"{len(kept)} of {len(given)} session(s) {verb} (see above); {'; '.join(fixes)}")


def prune_sessions(opts: GlobalOptions, older_than: str, *, dry_run: bool, force: bool) -> None:
    """Delete this workspace's sessions last written more than ``older_than`` ago, except those a live run drives
    and (without ``force``) those a run's lineage names: they are listed as kept; that is not a failure."""
    age = parse_age(older_than)
    project = _project_key(opts)

    def plan(upkeep: flower_stores.StoreUpkeep) -> UpkeepPlan:
        return anyio.run(lambda: upkeep.plan_prune(age, project_key=project, force=force))

    _run_plan(opts, "sessions-prune", plan, dry_run)


def _size_row(size: StoreSize) -> dict[str, Any]:
    return {"bytes": size.total_bytes, "reclaimable_bytes": size.reclaimable_bytes, "detail": size.detail}


def compact_store(opts: GlobalOptions, *, full: bool, dry_run: bool, force: bool) -> None:
    """Give deleted rows' space back (SQLite ``VACUUM``; PostgreSQL ``VACUUM``, ``--full``: ``VACUUM FULL``).

    Refused (exit 1) while a run drives a session of the store, unless ``force``: the rewrite makes its appends
    wait. ``dry_run`` measures only.
    """
    with _upkeep(opts) as upkeep:
        before = upkeep.size()
        live = anyio.run(upkeep.live_sessions)
        if live and not force and not dry_run:
            named = ", ".join(sid for _, sid in live[:3]) + (" …" if len(live) > 3 else "")
            raise Exit(
                ExitCode.NOT_DONE,
                f"{len(live)} session(s) are driven now ({named}): compacting would make their writes wait while "
                f"{store_label(opts)} is rewritten; rerun when they end, or with --force",
            )
        after = None if dry_run else anyio.run(lambda: upkeep.compact(full=full))[1]
    if opts.json:
        document = {
            "kind": "sessions-compact",
            "store": store_label(opts),
            "dry_run": dry_run,
            "full": full,
            "live_sessions": [sid for _, sid in live],
            "before": _size_row(before),
            "after": None if after is None else _size_row(after),
        }
        write_stdout(json.dumps(document, ensure_ascii=False) + "\n")
        return
    if after is None:
        free = (
            f"; at least {human_bytes(before.reclaimable_bytes)} is free space a compaction gives back"
            if before.reclaimable_bytes
            else ""
        )
        write_stdout(
            f"dry run: {store_label(opts)} takes {human_bytes(before.total_bytes)}{free}; nothing was changed\n"
        )
        return
    ratio = after.total_bytes / before.total_bytes if before.total_bytes else 1.0
    write_stdout(
        f"compacted {store_label(opts)}: {human_bytes(before.total_bytes)} -> {human_bytes(after.total_bytes)} ({ratio:.0%})\n"
    )
