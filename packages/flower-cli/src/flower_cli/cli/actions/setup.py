"""``flower setup``: store a credential (and optionally a gateway and a model) in the user .env."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

import flower_env

from ..._shared.exits import Exit, ExitCode
from ...view import Renderer
from .credentials import base_url_problem, interactive, interactive_setup, save
from .output import human_view, write_stdout

if TYPE_CHECKING:
    from .._global_options import GlobalOptions

__all__ = ["run_setup_command"]


def run_setup_command(opts: GlobalOptions, *, token: str | None, base_url: str | None, model: str | None) -> None:
    """Save, then (on a terminal) probe the credential once; ``--json`` adds ``{"kind": "setup", ...}`` on stdout."""

    view: Renderer = human_view(opts)
    flower_env.load_dotenv()
    if base_url:
        wrong = base_url_problem(base_url)
        if wrong:
            raise Exit(ExitCode.USAGE, f"--base-url {wrong}; nothing was saved.")
    if token is not None:
        if not token.strip():
            raise Exit(ExitCode.USAGE, "--token is empty; give the API key or gateway token to store.")
        saved = save(view, token.strip(), base_url, model)
    elif base_url is not None or model is not None:
        raise Exit(ExitCode.USAGE, "--base-url and --model are stored together with a credential; add --token.")
    else:
        if not interactive():
            raise Exit(
                ExitCode.USAGE,
                "no terminal to ask on; pass the values: flower setup --token TOKEN [--base-url URL] [--model NAME]",
            )
        reason = "Reconfiguring." if flower_env.check_credentials() is None else "No credentials configured yet."
        if not interactive_setup(view, reason=reason):
            raise Exit(ExitCode.CONFIG, "nothing was saved.")
        saved = flower_env.user_env_path()
    probe: dict[str, str] | None = None
    failed: str | None = None
    if interactive() and not os.environ.get("FLOWER_NO_PROBE"):
        view.line("- checking the credential…", "dim")
        verdict = flower_env.probe_credentials()
        probe = {"verdict": verdict.verdict, "detail": verdict.detail}
        if verdict.verdict == "ok":
            flower_env.remember_probe()  # the first run today need not pay for the same check again
            view.line("+ the credential works", "green")
        elif verdict.verdict == "net":
            view.line(f"  (could not reach the endpoint to check: {verdict.detail})", "dim")
        else:
            failed = f"saved, but the check failed ({verdict.verdict}): {verdict.detail}; run `flower setup` again."
    if opts.json:
        write_stdout(json.dumps({"kind": "setup", "saved": str(saved), "probe": probe}, ensure_ascii=False) + "\n")
    if failed:
        raise Exit(ExitCode.CONFIG, failed)
