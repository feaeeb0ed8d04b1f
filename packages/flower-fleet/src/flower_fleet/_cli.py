"""``flower fleet …``: a typer app flower-cli mounts through its ``flower_cli.commands`` entry point.

Only typer is imported at the top: ``flower --help`` loads this module, and must stay fast. Each command
imports the Temporal SDK inside its function.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer

if TYPE_CHECKING:
    from temporalio.runtime import Runtime

    from ._client import Fleet  # why: it loads Temporal; flower --help loads this module
    from ._model import RunState

__all__ = ["app"]

T = TypeVar("T")

# Exit codes as flower's: 1 the run did not complete, 2 a usage mistake, 3 configuration (the server).
_NOT_DONE, _USAGE, _CONFIG = 1, 2, 3
_RUN_ID = "20261206-101500-a1b2c3"  # the examples' run id, as `submit` makes them


def _example(*lines: str) -> str:
    """A command's help epilog: its example, printed as written (click's \\b: not re-wrapped)."""
    return "\b\n" + ("Example:" if len(lines) == 1 else "Examples:") + "\n" + "\n".join(f"  {e}" for e in lines)


app = typer.Typer(
    help=(
        "Run flower workflows on many machines, on a Temporal server (FLOWER_TEMPORAL=host:port): "
        "`flower fleet worker` on each machine, `flower fleet submit flows.py:main` from anywhere."
    ),
    epilog=_example(
        "flower fleet worker --store postgresql://fleet@db.example/flower",
        "flower fleet submit flows.py:main --shared --wait",
    ),
    rich_markup_mode=None,
    no_args_is_help=True,
)


def _fail(code: int, message: str) -> typer.Exit:
    sys.stderr.write(f"flower fleet: {message}\n")
    _leave(code)
    return typer.Exit(code)


def _leave(code: int) -> None:
    """Returns, unless a command's Temporal runtime outlived it: then the process ends here (`_lifetime.leave`)."""
    if "flower_fleet._lifetime" in sys.modules:  # loaded only by a command that connected
        sys.modules["flower_fleet._lifetime"].leave(code)


def _failure(exc: BaseException) -> tuple[int, str] | None:
    """The exit code and the one line for a failure the fleet knows (None: a bug, which keeps its traceback)."""
    # why: these load Temporal, and `flower --help` loads this module
    from temporalio.service import RPCError

    from ._client import RunNotFoundError  # why: as above
    from ._config import FleetConfig, FleetConfigError
    from ._transport import SERVER_TROUBLE, call_failure

    if isinstance(exc, FleetConfigError):
        return _CONFIG, str(exc)
    if isinstance(exc, RunNotFoundError):
        return _USAGE, f"{exc}; `flower fleet status` lists the runs"
    if isinstance(exc, RPCError):
        address = FleetConfig.from_env().address
        return (_CONFIG if exc.status in SERVER_TROUBLE else _NOT_DONE), call_failure(address, exc)
    return None


@dataclass(frozen=True)
class _Failed:
    """A known failure, as plain values: an exception would keep, through its traceback's frames, the client
    and its runtime alive past the command (see `_lifetime`)."""

    code: int
    message: str


def _run(work: Callable[[Fleet], Awaitable[T]], root: Path | None = None) -> T:
    """Connect (FLOWER_TEMPORAL…), run ``work`` on a Temporal runtime of this command's own (gone before this
    returns: see `_lifetime`), and turn the fleet's errors into one line and an exit code."""
    # why: these load Temporal, and `flower --help` loads this module
    from ._client import Fleet
    from ._lifetime import forget_tracebacks, run_on_own_runtime

    async def go(runtime: Runtime) -> T | _Failed:
        try:
            fleet = await Fleet.connect(runtime=runtime, root=root)
            return await work(fleet)
        except Exception as exc:
            known = _failure(exc)
            if known is None:
                raise
            forget_tracebacks(exc)
            return _Failed(*known)

    outcome = run_on_own_runtime(go)
    if isinstance(outcome, _Failed):
        raise _fail(outcome.code, outcome.message)
    return outcome


def _state_lines(state: RunState) -> list[str]:
    from ._logs import one_line  # why: it imports Temporal's enums, which `flower --help` must not load

    head = f"{state.run_id}  {state.status}  {state.workflow}  ${state.cost_usd:.4f}"
    lines = [head]
    done = {o.step: o for o in state.done}
    # A go phase continued after a question runs as "<label>/<n>": it is the same step.
    running = {r.step.split("/", 1)[0]: r for r in state.running}
    for name in state.steps:
        outcome = done.get(name)
        if outcome is not None:
            how = "skipped" if outcome.skipped else ("ok" if outcome.ok else f"failed: {one_line(outcome.error)}")
            line = f"  {name}: {how}  session {outcome.session_id or '-'}  on {outcome.worker or '-'}"
            if outcome.restored_from:
                line += f"  (workspace restored from checkpoint {outcome.restored_from[:12]})"
            lines.append(line)
        elif name == state.step and state.limited_until is not None:
            # Waiting on a timer for a usage limit's reset: no activity, no worker slot held.
            until = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(state.limited_until))
            lines.append(f"  {name}: limited until {until} (a usage limit; no worker slot held)")
        elif name in running:
            held = running[name]
            lines.append(f"  {name}: {held.state or 'running'}  attempt {held.attempt}  on {held.worker or '-'}")
        elif name == state.step:
            lines.append(f"  {name}: running")
        else:
            lines.append(f"  {name}: waiting")
    if state.question:
        lines.append(f"  question: {state.question}")
    if state.error:
        lines.append(f"  error: {one_line(state.error)}")
    return lines


def _reason(state: RunState) -> str:
    from ._logs import one_line  # why: as in _state_lines

    return one_line(state.error)


def _as_json(state: RunState) -> str:

    return json.dumps({**dataclasses.asdict(state), "cost_usd": state.cost_usd}, ensure_ascii=False)


@app.command(epilog=_example("flower fleet worker --store postgresql://fleet@db.example/flower --slots 2"))
def worker(
    ctx: typer.Context,
    slots: Annotated[int, typer.Option("--slots", min=1, help="How many steps this machine runs at once.")] = 1,
    store: Annotated[
        str | None,
        typer.Option("--store", metavar="URL", help="The session store every worker shares (also FLOWER_STORE_URL)."),
    ] = None,
    root: Annotated[
        Path | None,
        typer.Option(
            "--root", metavar="PATH", help="The fleet root (also FLOWER_FLEET_ROOT) [default: ~/flower-fleet]."
        ),
    ] = None,
    heartbeat_every: Annotated[
        float, typer.Option("--heartbeat-every", min=0.1, help="Seconds between a running step's heartbeats.")
    ] = 5.0,
    checkpoint_every: Annotated[
        float,
        typer.Option(
            "--checkpoint-every", min=1.0, help="Seconds between the checkpoints of a --repo run's step while it runs."
        ),
    ] = 300.0,
) -> None:
    """Run steps of the fleet's runs on this machine until SIGTERM (which hands its running steps back)."""
    # flower takes --store as its global option (before or after the command): it arrives in ctx.obj.
    url = store or getattr(ctx.obj, "store", None) or os.environ.get("FLOWER_STORE_URL") or None
    if url is None:
        raise _fail(_USAGE, "a worker needs the store every worker shares: --store postgresql://… or FLOWER_STORE_URL")
    if not url.startswith(("postgresql://", "postgres://")):
        raise _fail(_USAGE, f"--store {url.split(':', 1)[0]}:…: a fleet's store is PostgreSQL (postgresql://…)")

    async def go(fleet: Fleet) -> None:
        made = fleet.worker(slots=slots, store=url, heartbeat_every=heartbeat_every, checkpoint_every=checkpoint_every)
        sys.stderr.write(
            f"flower fleet: worker {made.config().get('identity')} polling {fleet.config.task_queue} "
            f"on {fleet.config.address} with {slots} slot(s)\n"
        )
        await fleet.run_worker(made)

    _run(go, root=root)
    _leave(0)


def _is_workflow(target: str) -> bool:
    """``file.py:attr`` or ``module:attr`` (one word with a colon); anything else is a go ask."""

    return re.fullmatch(r"[\w./~-]+:[A-Za-z_]\w*", target.strip()) is not None


@app.command(
    epilog=_example(
        "flower fleet submit flows.py:main --repo git@example.com:me/project.git --wait",
        'flower fleet submit "add a greeting to the README" --shared',
    )
)
def submit(
    target: Annotated[
        str,
        typer.Argument(
            metavar="WORKFLOW|ASK",
            help="The workflow, as file.py:attr inside the run's workspace; or an ask in words: a go run.",
        ),
    ],
    run_id: Annotated[
        str | None, typer.Option("--run-id", help="The run's id; submitting an existing id starts nothing.")
    ] = None,
    repo: Annotated[
        str, typer.Option("--repo", metavar="URL", help="The git remote the workspace is filled from.")
    ] = "",
    branch: Annotated[str, typer.Option("--branch", help="The branch of --repo to start from.")] = "",
    shared: Annotated[
        bool, typer.Option("--shared", help="The fleet root is one filesystem every worker sees: no checkpoints.")
    ] = False,
    wait: Annotated[bool, typer.Option("--wait", help="Wait for the run to end; exit 1 unless it completed.")] = False,
    heartbeat_timeout: Annotated[
        float, typer.Option("--heartbeat-timeout", min=1.0, help="Seconds without a heartbeat before a step moves.")
    ] = 30.0,
    attempts: Annotated[int, typer.Option("--attempts", min=1, help="Attempts of each step's task.")] = 10,
    rounds: Annotated[int, typer.Option("--rounds", min=1, help="A go run: judged work rounds in all.")] = 3,
    asks: Annotated[
        int | None, typer.Option("--asks", min=0, help="A go run: questions to the person at most [default: no limit].")
    ] = None,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout",
            min=0.0,
            help="A go run: seconds a question waits for `flower fleet answer` (0: nobody is asked; inf: forever).",
        ),
    ] = 1800.0,
    no_goal: Annotated[bool, typer.Option("--no-goal", help="A go run: no goal and no judge, one round.")] = False,
    budget: Annotated[
        float | None,
        typer.Option(
            "--budget",
            metavar="USD",
            min=0.01,
            help="What the whole run may spend, every step counted [default: no limit].",
        ),
    ] = None,
) -> None:
    """Submit a run — of a workflow (file.py:attr) or of an ask (a go run: clarify, goal, judged rounds) — and
    print its id (with --wait, its final status)."""

    if not repo and not shared:
        raise _fail(_USAGE, "say where the run's files come from: --repo URL, or --shared (one filesystem)")
    is_flow = _is_workflow(target)
    if not target.strip():
        raise _fail(_USAGE, 'give a workflow (flows.py:main) or an ask in quotes ("add a greeting")')

    async def go(fleet: Fleet) -> tuple[str, RunState | None]:
        rid = await fleet.submit(
            target if is_flow else "",
            ask="" if is_flow else target,
            run_id=run_id,
            repo=repo,
            branch=branch,
            shared=shared,
            heartbeat_timeout=heartbeat_timeout,
            max_attempts=attempts,
            rounds=rounds,
            asks=asks,
            question_timeout=None if math.isinf(timeout) else timeout,
            goal=not no_goal,
            budget_usd=budget,
        )
        return rid, (await fleet.result(rid) if wait else None)

    rid, state = _run(go)
    print(rid if state is None else "\n".join(_state_lines(state)))
    if state is not None and state.status != "completed":
        raise _fail(_NOT_DONE, f"run {rid} {state.status}" + (f": {_reason(state)}" if state.error else ""))
    _leave(0)


@app.command(epilog=_example(f"flower fleet status {_RUN_ID}", "flower --json fleet status"))
def status(
    ctx: typer.Context,
    run: Annotated[str | None, typer.Argument(help="One run's id [default: every run, newest first].")] = None,
) -> None:
    """The fleet's runs: each step, the worker that ran it, its session, a pending question, the cost (with
    flower's global --json: one JSON object per run)."""
    as_json = bool(getattr(ctx.obj, "json", False))

    async def go(fleet: Fleet) -> list[RunState]:
        ids = [run] if run else [rid async for rid in fleet.runs()]
        return [await fleet.state(rid) for rid in ids]

    states = _run(go)
    for state in states:
        print(_as_json(state) if as_json else "\n".join(_state_lines(state)))
    _leave(0)


@app.command(epilog=_example(f'flower fleet answer {_RUN_ID} "in French, please"'))
def answer(
    run: Annotated[str, typer.Argument(help="The run's id.")],
    text: Annotated[str, typer.Argument(help="The answer (empty: skip the question; the agent decides).")],
) -> None:
    """Answer the question a go run waits on (`flower fleet status` shows it); its phase continues with it."""

    async def go(fleet: Fleet) -> None:
        await fleet.answer(run, text)

    _run(go)
    _leave(0)


@app.command(epilog=_example(f"flower fleet cancel {_RUN_ID}"))
def cancel(run: Annotated[str, typer.Argument(help="The run's id.")]) -> None:
    """Cancel a run: its running step stops at its next heartbeat and is recorded."""

    async def go(fleet: Fleet) -> None:
        await fleet.cancel(run)

    _run(go)
    _leave(0)


@app.command(epilog=_example(f"flower fleet logs {_RUN_ID}"))
def logs(run: Annotated[str, typer.Argument(help="The run's id.")]) -> None:
    """A run's history: each step's attempts, the worker of each, how each ended."""

    async def go(fleet: Fleet) -> list[str]:
        return await fleet.logs(run)

    print("\n".join(_run(go)))
    _leave(0)
