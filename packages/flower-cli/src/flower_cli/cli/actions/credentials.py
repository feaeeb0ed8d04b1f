"""The credential a run needs: the settings shown with -v, the two gates before a run (a credential exists, it
works), the gateway address check, and the interactive setup that fills the user .env."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import flower_env

from ..._shared.exits import Exit, ExitCode
from ...runtime import explain
from ...view import Renderer
from .reach import reach_endpoint
from .secret_input import read_secret_line

__all__ = ["base_url_problem", "ensure_credentials", "interactive", "interactive_setup", "save", "show_settings"]


def interactive() -> bool:
    return sys.stdin.isatty()


def base_url_problem(url: str) -> str | None:
    """What is wrong with a gateway address (``None``: it is an http(s) URL with a host and a valid port)."""
    shown = repr(url if len(url) <= 80 else url[:77] + "...")
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname or any(c.isspace() for c in url.strip()):
        return f"is {shown}, not an http(s) URL such as https://gateway.example.com"
    try:
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number or out of range
    except ValueError as exc:
        return f"is {shown}, whose port is not usable ({exc})"
    return None


def _ask(view: Renderer, question: str, hint: str, *, secret: bool = False) -> str:
    """One answer from stdin; ``secret``: not echoed on a terminal (the key), still a plain line from a pipe."""
    view.line(f"{question}  {hint}")
    sys.stderr.write("   > ")
    sys.stderr.flush()
    if secret:
        return read_secret_line().strip()
    line = sys.stdin.readline()
    if not line:
        raise EOFError
    return line.strip()


def save(view: Renderer, token: str, base_url: str | None, model: str | None) -> Path:

    try:
        path = flower_env.write_user_env(flower_env.setup_values(token, base_url=base_url or None, model=model or None))
    except (flower_env.EnvFileError, OSError) as exc:
        # flower_env writes atomically: on failure the old .env is untouched, and the message says which file.
        known = explain(exc, elsewhere="set XDG_CONFIG_HOME to another folder")
        raise (exc if known is None else Exit(*known)) from exc
    flower_env.load_dotenv(path, override=True)
    view.line(f"+ saved: {path} (readable only by you)", "green")
    return path


def interactive_setup(view: Renderer, reason: str | None = None) -> bool:
    """Ask for token, gateway and model on the terminal. False when cancelled or there is no terminal."""
    if not interactive():
        return False

    view.line("== configure flower " + "=" * 40, "bold")
    if reason:
        view.line(reason, "yellow")
    view.line(f"Credentials are stored in {flower_env.user_env_path()} (mode 0600). Set once, works everywhere.")
    try:
        token = _ask(
            view,
            "1. Your API key or gateway token",
            "(Anthropic's sk-ant-…, or one a gateway issued; not shown as you type)",
            secret=True,
        )
        if not token:
            view.line("No token given; cancelled.", "red")
            return False
        base_url = _ask(view, "2. Gateway address", "(Enter = Anthropic's API; a gateway: its base URL, without /v1)")
        model = _ask(view, "3. Model name", "(Enter = default; a gateway with its own model names: give one)")
    except (EOFError, KeyboardInterrupt):
        view.line("Cancelled.", "red")
        return False
    save(view, token, base_url, model)
    return True


def show_settings(view: Renderer) -> None:
    """The known settings as the run will use them, each with its source: call it after `load_dotenv`."""

    for setting in flower_env.settings():
        view.line(f"  {setting.key} = {setting.display}  ({setting.source})", "dim")


def ensure_credentials(
    view: Renderer, *, probe: bool = True, verbose: bool = False, reach: bool = False, sink: Any = None
) -> None:
    """Gate 1: a credential exists (else setup on a terminal, else exit 3). Gate 2: it works (live probe).

    ``verbose`` (-v) shows the settings once every .env source is loaded, so what is shown is what the run
    uses (shown before the load, the base URL read "(default)" while the run went to the .env's gateway).
    ``reach`` (a run): before the probe, look at the endpoint and wait for it if it is not there, saying so at
    once (`reach.reach_endpoint`; ``sink``: the ``--json`` event sink, which hears it too).
    """

    flower_env.load_dotenv()
    for note in flower_env.load_notes():
        view.line(f"  ! {note}", "yellow")
    if verbose:
        show_settings(view)
    url = os.environ.get("ANTHROPIC_BASE_URL")
    wrong = base_url_problem(url) if url else None
    if wrong:
        # Caught here, before the run: the harness reports a bad address as a transient "Invalid URL", so
        # the run would retry and wait for a network that is not the problem.
        where = flower_env.source_of("ANTHROPIC_BASE_URL") or "the environment"
        raise Exit(
            ExitCode.CONFIG,
            f"ANTHROPIC_BASE_URL (from {where}) {wrong}: fix that line, or run `flower setup` to reconfigure.",
        )
    problem = flower_env.check_credentials()
    if problem:
        if not interactive():
            raise Exit(ExitCode.CONFIG, problem)
        view.line("First run? One credential is all flower needs.", "yellow")
        if not interactive_setup(view):
            raise Exit(ExitCode.CONFIG, problem)
    if reach:
        reach_endpoint(view, sink=sink)
    if not probe or os.environ.get("FLOWER_NO_PROBE") or not interactive():
        return
    if flower_env.probed_today():
        # A paid request per command adds up: one a day per endpoint and credential (setup and doctor always
        # probe). A credential revoked since is still caught: the run's first 401 stops it with exit 3.
        if verbose:
            view.line(f"  (credential checked earlier today; {flower_env.probed_path()})", "dim")
        return
    for attempt in (1, 2):
        view.line("- checking the credential…", "dim")
        verdict = flower_env.probe_credentials()
        if verdict.verdict in ("ok",):
            flower_env.remember_probe()
            return
        if verdict.verdict == "net":
            view.line(
                f"  (the probe did not get through: {verdict.detail} — treating it as a network problem, going on)",
                "dim",
            )
            return
        what = "credential rejected" if verdict.verdict == "auth" else "gateway address or model name is wrong"
        view.line(f"! {what}: {verdict.detail}", "red")
        if attempt == 2 or not interactive_setup(view, reason="Let's fix it; it is checked again right after."):
            raise Exit(ExitCode.CONFIG, f"{what}; run `flower setup` to reconfigure.")
