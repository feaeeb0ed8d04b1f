"""``flower setup``: store a credential (and optionally a gateway and a model) in the user .env."""

from __future__ import annotations

from typing import Annotated

import typer

from .._help import FlowerCommand, epilog
from .._root_app import app

__all__ = ["setup"]


@app.command(cls=FlowerCommand, epilog=epilog("flower setup --token sk-ant-... --model claude-sonnet-4-5"))
def setup(
    ctx: typer.Context,
    token: Annotated[
        str | None, typer.Option("--token", metavar="TOKEN", help="API key (sk-ant-…) or gateway token.")
    ] = None,
    base_url: Annotated[
        str | None, typer.Option("--base-url", metavar="URL", help="Gateway base URL (without /v1).")
    ] = None,
    model: Annotated[str | None, typer.Option("--model", metavar="MODEL", help="Model name to use by default.")] = None,
) -> None:
    """Store credentials in the user .env (${XDG_CONFIG_HOME:-~/.config}/flower/.env, mode 0600)."""
    from ..actions.setup import run_setup_command  # why: it loads flower_env and the runtime; `--help` must not

    run_setup_command(ctx.obj, token=token, base_url=base_url, model=model)
