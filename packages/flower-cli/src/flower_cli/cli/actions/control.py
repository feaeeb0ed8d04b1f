"""``flower status / watch / answer / mail / stop``: a run seen and steered from another terminal, through the
store it publishes to (`flower_cli.control`). Nothing here touches the run's process: it reads the run log and
writes the run's inbox, and the run takes its messages within a second."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

import anyio

from ..._shared.exits import Exit, ExitCode
from ...control import Control, ControlError, RunInfo, default_sender
from ...runtime import Event
from ...view import sanitize, tokens
from .output import human_view, write_stdout
from .store import explained, open_store, store_label

if TYPE_CHECKING:
    from flower_stores import RunEvent

    from ...view import Renderer
    from .._global_options import GlobalOptions

__all__ = ["show_status", "tell_run", "watch_run"]

_TAKEN_WAIT_S = 10.0  # a running run takes its inbox every half second; this much leaves room for a busy machine


def _control(g: GlobalOptions, *, write: bool) -> Control:
    db = g.run_dir / "sessions.db"
    if not g.store and not db.exists():
        raise Exit(
            ExitCode.USAGE,
            f"no {db}: nothing has run in this workspace yet (point -w at the run's workspace, or --store at its store)",
        )
    store = open_store(g, read_only=not write)
    try:
        return Control(store)
    except ControlError as exc:
        raise Exit(ExitCode.CONFIG, str(exc)) from exc


def _say(g: GlobalOptions, text: str, style: str = "") -> None:
    if not g.json:
        human_view(g).line(text, style)


# --- status -----------------------------------------------------------------------------------------------


def show_status(g: GlobalOptions) -> None:
    control = _control(g, write=False)
    try:
        runs = control.runs()
    except Exception as exc:
        raise explained(exc, g) from exc
    finally:
        control.store.close()
    if g.json:
        write_stdout(
            json.dumps({"kind": "status", "store": store_label(g), "runs": [r.to_json() for r in runs]}) + "\n"
        )
        return
    if not runs:
        _say(g, f"no run has published to {store_label(g)} yet (runs since this release do)", "dim")
        return
    write_stdout("\n".join(_status_lines(runs)) + "\n")


def _status_lines(runs: list[RunInfo]) -> list[str]:
    rows = [("RUN", "STATE", "STEP", "SESSION", "CONTEXT", "COST", "WAITS ON")]
    for r in runs:
        step = f"{r.step} ({r.step_index}/{r.step_total})" if r.step and r.step_total else r.step or "-"
        question = " ".join(r.question.split())[:60] if r.question else ""
        if r.state == "waiting" and r.question_id:
            question = f"{r.question_id}: {question}"
        rows.append(
            (
                r.run_id,
                r.state,
                step,
                r.session[:8] or "-",
                tokens(r.context) if r.context else "-",
                f"${r.cost_usd:.2f}",
                question,
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return [
        sanitize("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=False)) + "  " + row[-1]).rstrip()
        for row in rows
    ]


# --- watch ------------------------------------------------------------------------------------------------


def watch_run(g: GlobalOptions, run_id: str | None, *, only_new: bool = False) -> None:
    control = _control(g, write=False)
    try:
        run = _picked(control, run_id)
        view = human_view(g)
        if not g.json:
            view.line(
                f"watching run {run.run_id} ({run.command or 'flower'} in {run.workspace or '?'}) · {run.state}; Ctrl-C stops watching, not the run",
                "bold",
            )
        after = run.last_seq if only_new else 0
        last = _follow(g, control, run.run_id, after, view)
        end = control.run(run.run_id)
    except KeyboardInterrupt:
        _say(g, "  . stopped watching; the run goes on (`flower status` shows it)", "dim")
        return
    finally:
        control.store.close()
    _say(
        g,
        f"  = run {end.run_id} is {end.state}" + (f" ({end.stopped_by} stopped it)" if end.stopped_by else ""),
        "bold",
    )
    if last is None or end.state != "done" or end.ok is False:
        raise Exit(
            ExitCode.NOT_DONE,
            f"run {end.run_id} ended {end.state}" + ("" if end.ok is not False else " without reaching its goal"),
        )


def _follow(g: GlobalOptions, control: Control, run_id: str, after: int, view: Renderer) -> dict[str, Any] | None:
    """Show the run's events until it is done or gone; its ``done`` event, or None."""
    done: list[dict[str, Any]] = []

    async def main() -> None:
        async for event in control.follow(run_id, after=after):
            _show(g, view, event)
            if event.event.get("kind") == "done":
                done.append(event.event)

    anyio.run(main)
    return done[-1] if done else None


def _show(g: GlobalOptions, view: Renderer, stored: RunEvent) -> None:
    event = stored.event
    if g.json:
        write_stdout(json.dumps({"seq": stored.seq, "at_ms": stored.at_ms, **event}, ensure_ascii=False) + "\n")
        return
    kind = event.get("kind")
    raw = event.get("payload")
    payload: dict[str, Any] = raw if isinstance(raw, dict) else {}
    if kind == "control":
        view.line(
            f"  ~ {payload.get('action')} from {payload.get('sender') or 'someone'}: {event.get('text', '')}", "magenta"
        )
    elif kind == "done":
        view.line(
            f"  = done: {'ok' if event.get('ok') else 'not done'} · ${float(event.get('cost_usd') or 0.0):.4f}", "bold"
        )
    elif isinstance(kind, str):
        view.render(
            Event(
                kind,  # type: ignore[arg-type]  # a stored kind; the renderer shows nothing for one it does not know
                str(event.get("text") or ""),
                str(event.get("tool") or ""),
                payload or {},
                bool(event.get("subagent")),
            )
        )


# --- answer, mail, stop -----------------------------------------------------------------------------------


def tell_run(g: GlobalOptions, kind: str, words: list[str], *, question: str = "") -> None:
    control = _control(g, write=True)
    try:
        run_id, text = _run_and_text(control, kind, words)
        run = _picked(control, run_id)
        sender = f"{default_sender()} via flower {kind}"
        try:
            if kind == "answer":
                message = control.answer(run.run_id, _option(run, text), question_id=question, sender=sender)
            elif kind == "mail":
                message = control.mail(run.run_id, text, sender=sender)
            else:
                message = control.stop(run.run_id, reason=text, sender=sender)
        except ControlError as exc:
            raise Exit(ExitCode.USAGE, str(exc)) from exc
        ack = control.wait_taken(message, timeout_s=_TAKEN_WAIT_S)
    except Exit:
        raise
    except Exception as exc:
        raise explained(exc, g) from exc
    finally:
        control.store.close()
    _report(g, kind, run, message.id, ack)


def _run_and_text(control: Control, kind: str, words: list[str]) -> tuple[str | None, str]:
    """(RUN or None, the text): the first word is a RUN when it names one of the store's runs (and more follows)."""
    if kind == "stop":
        return (words[0] if words else None), ""
    if not words:
        raise Exit(ExitCode.USAGE, f'say what to {kind}, e.g. flower {kind} "PostgreSQL, please"')
    if len(words) >= 2 and any(r.run_id.startswith(words[0]) for r in control.runs()):
        return words[0], " ".join(words[1:])
    return None, " ".join(words)


def _picked(control: Control, run_id: str | None) -> RunInfo:
    try:
        return control.pick(run_id)
    except ControlError as exc:
        raise Exit(ExitCode.USAGE, str(exc)) from exc


def _option(run: RunInfo, text: str) -> str:
    """A number picks one of the waiting question's options, as it does in the run's own terminal."""
    stripped = text.strip()
    if stripped.isdigit() and run.options and 1 <= int(stripped) <= len(run.options):
        return run.options[int(stripped) - 1]
    return text


def _report(g: GlobalOptions, kind: str, run: RunInfo, message_id: int, ack: dict[str, Any] | None) -> None:
    taken = ack is not None
    ok = bool(ack and ack.get("ok"))
    note = str(ack.get("note") or "") if ack else ""
    if g.json:
        record = {"kind": kind, "run": run.run_id, "message": message_id, "taken": taken, "ok": ok, "note": note}
        write_stdout(json.dumps(record) + "\n")
    if not taken:
        sys.stderr.write(
            sanitize(
                f"  ! run {run.run_id} has not taken the {kind} within {_TAKEN_WAIT_S:.0f} s; it stays in its inbox"
            )
            + "\n"
        )
    elif not ok:
        raise Exit(ExitCode.NOT_DONE, f"run {run.run_id} did not take the {kind}: {note}")
    else:
        _say(g, f"  + run {run.run_id}: {note}", "green")
