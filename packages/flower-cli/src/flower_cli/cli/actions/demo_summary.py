"""``flower demo``'s summary: what the demo did, read back from what it left on disk: the manifest, the lineage, the notes, the spill
folder and the files the workers wrote. Nothing here is the script's own words: if the product did something
else, the summary says that instead."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..._shared.words import counted
from ...demo import DemoRun
from ...go import Goal, Verdict

__all__ = ["summary_lines"]

_SHOWN_FILES = ("hello.txt", "README.md")


def summary_lines(run: DemoRun) -> list[str]:
    """The lines the person reads after the demo: what each step did, then where to look closer."""
    project = run.project
    rows = _rows(project / "runs" / "manifest.json")
    work = json.loads((project / "runs" / "lineage.json").read_text(encoding="utf-8"))["steps"].get("work", "")
    lines = [
        f"flower demo: a whole `flower go` in {run.seconds:.1f} s, against a scripted model on 127.0.0.1 "
        f"({counted(run.requests, 'model request')}; no account, no network, nothing charged: the costs above are "
        "what its token counts would cost)",
        "",
        f"what it did, in {project}:",
        *_what_happened(project, rows, work),
        "",
        "look closer:",
    ]
    if run.page is not None:
        lines.append(f"  the page   {run.page}   (open it in a browser: `flower analyze --html` wrote it)")
    lines += [
        f"  cd {project} && flower analyze    # context, cache, workers, spills per step and session",
        f"  cd {project} && flower sessions   # the transcripts kept in runs/sessions.db",
        'then: `flower setup` (a key or a gateway) and `flower "what to build"` in a project of yours',
    ]
    return lines


def _what_happened(project: Path, rows: list[dict[str, Any]], work: str) -> list[str]:
    notes = project / ".flower" / "notes"
    asked = (notes / "qa-log.md").read_text(encoding="utf-8").count("- **Q**") if (notes / "qa-log.md").exists() else 0
    checks = len(Goal.load(notes / "goal.md").checks)
    said = [
        f"  clarify   {counted(asked, 'question')} asked, nobody answered (--timeout 0): the model recorded its "
        "assumption in .flower/notes/brief.md",
        f"  goal      {counted(checks, 'check')}, frozen in .flower/notes/goal.md",
    ]
    workers = sum(len(r.get("workers") or []) for r in rows if r["step"].startswith("work") and "·" not in r["step"])
    said.append(f"  work      a coordinator sent {counted(workers, 'worker')}; {_spilled(project)}")
    woke = False
    for row in rows:
        step = str(row["step"])
        if "·judge" in step:
            verdict = Verdict.parse(str(row.get("text") or ""))
            said.append(f"  judge     {verdict.state.replace('_', ' ')}: {verdict.reason.strip()}")
        elif step.startswith("work") and not row.get("ok") and row.get("error") == "killed-by-signal":
            said.append(f"  stopped   {step} cut off by SIGTERM; the step is recorded in runs/manifest.json")
        elif step == "work" and woke is False and row.get("session_id") == work and _loaded(row):
            woke = True
            sent = sum(int(load.get("sent_chars") or 0) for load in row.get("loads") or [])
            said.append(
                f"  resumed   `flower` again went on in the same session ({work[:8]}) from runs/sessions.db, "
                f"sending {sent:,} characters of it back to the model"
            )
    made = [name for name in _SHOWN_FILES if (project / name).exists()]
    said.append(f"  answer    {_answer(rows)}")
    said.append(f"  files     {', '.join(made) or 'none'}")
    return said


def _spilled(project: Path) -> str:
    spills = sorted((project / ".flower" / "spill").glob("*"))
    if not spills:
        return "no output was big enough to spill"
    biggest = max(spills, key=lambda p: p.stat().st_size)
    return (
        f"{counted(len(spills), 'output')} of {biggest.stat().st_size:,} characters went to "
        f"{biggest.relative_to(project)}, not into the context"
    )


def _loaded(row: dict[str, Any]) -> bool:
    """Whether the step continued a stored session (a load is recorded for each resume)."""
    return bool(row.get("loads"))


def _answer(rows: list[dict[str, Any]]) -> str:
    work = [r for r in rows if str(r["step"]).startswith("work") and "·" not in str(r["step"]) and r.get("ok")]
    return str(work[-1].get("text") or "").strip() if work else "(none)"


def _rows(manifest: Path) -> list[dict[str, Any]]:
    rows = json.loads(manifest.read_text(encoding="utf-8"))
    return [r for r in rows if isinstance(r, dict)]
