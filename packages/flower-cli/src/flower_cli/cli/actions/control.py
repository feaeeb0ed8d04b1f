"""``flower status / watch / answer / mail / stop``: a run seen and steered from another terminal, through the
store it publishes to (`flower_cli.control`). Nothing here touches the run's process: it reads the run log and
writes the run's inbox, and the run takes its messages within a second."""

from __future__ import annotations

import functools
import json
import sys
from typing import TYPE_CHECKING, Any

import anyio

from ..._shared.exits import Exit, ExitCode
from ...control import Control, ControlError, FleetRuns, RunInfo, default_sender, fleet_configured
from ...runtime import Event
from ...view import sanitize, tokens
from .output import human_view, write_stdout
from .store import explained, open_store, store_label

if TYPE_CHECKING:
    from flower_stores import RunEvent

    from ...view import Renderer
    from .._global_options import GlobalOptions

__all__ = ["show_status", "tell_run", "watch_run"]

_TAKEN_WAIT_S = 30.0  # a running run takes its inbox every half second; this much leaves room for a busy machine


def _control(g: GlobalOptions, *, write: bool, required: bool = True) -> Control | None:
    """The store's runs; None when there is no store here and ``required`` is off (a fleet is configured)."""
    db = g.run_dir / "sessions.db"
    if not g.store and not db.exists():
        if not required:
            return None
        raise Exit(
            ExitCode.USAGE,
            f"no {db}: nothing has run in this workspace yet (point -w at the run's workspace, or --store at its store)",
        )
    store = open_store(g, read_only=not write)
    try:
        return Control(store)
    except ControlError as exc:
        raise Exit(ExitCode.CONFIG, str(exc)) from exc


def _closed(control: Control | None) -> None:
    if control is not None:
        control.store.close()


@functools.cache  # asked once per command: each ask is a `flower fleet status` process
def _fleet_runs_once() -> tuple[RunInfo, ...]:
    try:
        return tuple(FleetRuns().runs())
    except ControlError as exc:
        raise Exit(ExitCode.CONFIG, f"the fleet (FLOWER_TEMPORAL): {exc}") from exc


def _fleet_runs() -> list[RunInfo]:
    """The fleet's runs when ``FLOWER_TEMPORAL`` points at one (through its signals), else none."""
    return list(_fleet_runs_once()) if fleet_configured() else []


def _say(g: GlobalOptions, text: str, style: str = "") -> None:
    if not g.json:
        human_view(g).line(text, style)


# --- status -----------------------------------------------------------------------------------------------


def show_status(g: GlobalOptions) -> None:
    control = _control(g, write=False, required=not fleet_configured())
    try:
        runs = control.runs() if control is not None else []
    except Exception as exc:
        raise explained(exc, g) from exc
    finally:
        _closed(control)
    runs += _fleet_runs()
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
                r.run_id + (" (fleet)" if r.fleet else ""),
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
    assert control is not None  # required: only the store's runs publish their events
    try:
        run = _picked(control, run_id)
        if run.fleet:
            raise Exit(
                ExitCode.USAGE, f"run {run.run_id} is a fleet run: `flower fleet logs {run.run_id}` shows its steps"
            )
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
    control = _control(g, write=True, required=not fleet_configured())
    try:
        run_id, text = _run_and_text(control, kind, words)
        run = _picked(control, run_id)
        if run.fleet:
            _report(g, kind, run, 0, _tell_fleet(kind, run, text))
            return
        assert control is not None  # a run that is not the fleet's is the store's
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
        _closed(control)
    _report(g, kind, run, message.id, ack)


def _tell_fleet(kind: str, run: RunInfo, text: str) -> dict[str, Any]:
    """An answer or a stop for a fleet run, as the fleet's signal (``flower fleet answer / cancel``)."""
    if kind == "mail":
        raise Exit(ExitCode.USAGE, f"run {run.run_id} is a fleet run: it takes answers and stops, not mail")
    if not run.live:
        raise Exit(ExitCode.USAGE, f"run {run.run_id} is {run.state}; only a running run takes {kind}s")
    try:
        if kind == "answer":
            if run.state != "waiting":
                raise ControlError(f"run {run.run_id} waits on no question now (it is {run.state})")
            FleetRuns().answer(run.run_id, text)
            return {"ok": True, "note": "answered through the fleet's signal"}
        FleetRuns().stop(run.run_id)
        return {"ok": True, "note": "cancelled through the fleet's signal: its running step stops and is recorded"}
    except ControlError as exc:
        raise Exit(ExitCode.USAGE, str(exc)) from exc


def _run_and_text(control: Control | None, kind: str, words: list[str]) -> tuple[str | None, str]:
    """(RUN or None, the text): the first word is a RUN when it names one of the runs (and more follows)."""
    if kind == "stop":
        return (words[0] if words else None), ""
    if not words:
        raise Exit(ExitCode.USAGE, f'say what to {kind}, e.g. flower {kind} "PostgreSQL, please"')
    known = (control.runs() if control is not None else []) + _fleet_runs()
    if len(words) >= 2 and any(r.run_id.startswith(words[0]) for r in known):
        return words[0], " ".join(words[1:])
    return None, " ".join(words)


def _picked(control: Control | None, run_id: str | None) -> RunInfo:
    """The store's run (``run_id``, or the one running); with a fleet configured, the fleet's runs count too."""
    if not fleet_configured():
        assert control is not None  # required without a fleet
        try:
            return control.pick(run_id)
        except ControlError as exc:
            raise Exit(ExitCode.USAGE, str(exc)) from exc
    mine = control.runs() if control is not None else []
    everything = mine + _fleet_runs()
    if run_id:
        exact = [r for r in everything if r.run_id == run_id]
        found = exact or [r for r in everything if r.run_id.startswith(run_id)]
        if len(found) == 1:
            return found[0]
        what = f"{len(found)} runs start with" if found else "no run here or on the fleet is"
        raise Exit(ExitCode.USAGE, f"{what} {run_id!r}; `flower status` lists the runs")
    live = [r for r in everything if r.live]
    if len(live) == 1:
        return live[0]
    if not live:
        raise Exit(ExitCode.USAGE, "no run is running here or on the fleet; `flower status` lists the runs")
    ids = ", ".join(r.run_id for r in live[:5])
    raise Exit(ExitCode.USAGE, f"{len(live)} runs are running ({ids}); say which: give its RUN id")


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
