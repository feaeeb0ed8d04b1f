"""``flower setup``: store a credential (and optionally a gateway and a model) in the user .env."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from ..._shared.exits import Exit, ExitCode
from ...view._render import Renderer
from .common import interactive

if TYPE_CHECKING:
    from .._global_options import GlobalOptions

__all__ = ["interactive_setup", "run_setup_command", "save"]


def _ask(view: Renderer, question: str, hint: str) -> str:
    view.line(f"{question}  {hint}")
    sys.stderr.write("   > ")
    sys.stderr.flush()
    line = sys.stdin.readline()
    if not line:
        raise EOFError
    return line.strip()


def save(view: Renderer, token: str, base_url: str | None, model: str | None) -> None:
    import flower_env

    try:
        path = flower_env.write_user_env(flower_env.setup_values(token, base_url=base_url or None, model=model or None))
    except (flower_env.EnvFileError, OSError) as exc:
        # flower_env writes atomically: on failure the old .env is untouched, and the message says which file.
        from ...runtime._failures import explain

        known = explain(exc, elsewhere="set XDG_CONFIG_HOME to another folder")
        raise (exc if known is None else Exit(*known)) from exc
    flower_env.load_dotenv(path, override=True)
    view.line(f"+ saved: {path} (readable only by you)", "green")


def interactive_setup(view: Renderer, reason: str | None = None) -> bool:
    """Ask for token, gateway and model on the terminal. False when cancelled or there is no terminal."""
    if not interactive():
        return False
    import flower_env

    view.line("== configure flower " + "=" * 40, "bold")
    if reason:
        view.line(reason, "yellow")
    view.line(f"Credentials are stored in {flower_env.user_env_path()} (mode 0600). Set once, works everywhere.")
    try:
        token = _ask(view, "1. Your API key or gateway token", "(Anthropic's sk-ant-…, or one a gateway issued)")
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


def run_setup_command(opts: GlobalOptions, *, token: str | None, base_url: str | None, model: str | None) -> None:
    import flower_env

    view = Renderer(verbose=opts.verbose)
    flower_env.load_dotenv()
    if base_url:
        from .common import base_url_problem

        wrong = base_url_problem(base_url)
        if wrong:
            raise Exit(ExitCode.USAGE, f"--base-url {wrong}; nothing was saved.")
    if token is not None:
        if not token.strip():
            raise Exit(ExitCode.USAGE, "--token is empty; give the API key or gateway token to store.")
        save(view, token.strip(), base_url, model)
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
    if interactive() and not os.environ.get("FLOWER_NO_PROBE"):
        view.line("- checking the credential…", "dim")
        verdict = flower_env.probe_credentials()
        if verdict.verdict == "ok":
            view.line("+ the credential works", "green")
        elif verdict.verdict == "net":
            view.line(f"  (could not reach the endpoint to check: {verdict.detail[:80]})", "dim")
        else:
            raise Exit(
                ExitCode.CONFIG,
                f"saved, but the check failed ({verdict.verdict}): {verdict.detail[:160]}; run `flower setup` again.",
            )
