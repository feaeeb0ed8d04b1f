"""``flower doctor``: every setting and where it came from, the endpoint, the credential, the store."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ..._shared.exits import Exit, ExitCode
from ...view import Renderer

if TYPE_CHECKING:
    from .._global_options import GlobalOptions

__all__ = ["run_doctor"]


def run_doctor(opts: GlobalOptions, *, probe: bool = True) -> None:
    import anyio

    import flower_env
    import flower_resilience

    view: Renderer = opts.renderer()
    problems: list[tuple[ExitCode, str]] = []
    flower_env.load_dotenv()

    view.line("settings", "bold")
    for setting in flower_env.settings():
        view.line(f"  {setting.key} = {setting.display}  ({setting.source})")
    for note in flower_env.load_notes():
        view.line(f"  ! {note}", "yellow")
    missing = flower_env.check_credentials()
    if missing:
        problems.append((ExitCode.CONFIG, "no usable credential: run `flower setup`"))
        view.line("  x " + missing.splitlines()[0], "red")

    view.line("endpoint", "bold")
    host, port = flower_resilience.endpoint()
    up = anyio.run(flower_resilience.reachable, host, port, 5.0)
    if up:
        view.line(f"  + {host}:{port} reachable (DNS + TCP, no request sent)", "green")
    else:
        problems.append((ExitCode.OFFLINE, f"{host}:{port} is not reachable"))
        view.line(f"  x {host}:{port} not reachable: check the network or ANTHROPIC_BASE_URL", "red")

    view.line("credential", "bold")
    if missing:
        view.line("  - skipped: no credential", "dim")
    elif not probe or os.environ.get("FLOWER_NO_PROBE"):
        view.line("  - live probe skipped (--no-probe / FLOWER_NO_PROBE)", "dim")
    elif not up:
        view.line("  - skipped: endpoint unreachable", "dim")
    else:
        verdict = flower_env.probe_credentials()
        if verdict.verdict == "ok":
            view.line("  + accepted" + (f" ({verdict.detail})" if verdict.detail else ""), "green")
        else:
            code = ExitCode.OFFLINE if verdict.verdict == "net" else ExitCode.CONFIG
            problems.append((code, f"credential check: {verdict.verdict}"))
            view.line(f"  x {verdict.verdict}: {verdict.detail}", "red")

    view.line("context window", "bold")
    _show_window(view, problems)

    view.line("store", "bold")
    from .store import check_store

    store_problem = check_store(opts, view)
    if store_problem:
        problems.append(store_problem)

    if problems:
        worst = next(
            c for c in (ExitCode.CONFIG, ExitCode.OFFLINE, ExitCode.NOT_DONE) if any(p[0] == c for p in problems)
        )
        raise Exit(worst, "doctor found problems: " + "; ".join(p[1] for p in problems))
    view.line("all good", "green")


def _show_window(view: Renderer, problems: list[tuple[ExitCode, str]]) -> None:
    """The window handoffs are planned against, where it came from, and when a session hands off."""
    from ...runtime import HandoffPolicy, resolve_window

    window = resolve_window(base_url=os.environ.get("ANTHROPIC_BASE_URL"))
    policy = HandoffPolicy(window=window.tokens)
    view.line(
        f"  {window.tokens:,} tokens ({window.source}); a session hands off at {policy.at:,}, warned from {policy.warn_at:,}"
    )
    if window.note:
        view.line(f"  ! {window.note}", "yellow", wrap=True)
