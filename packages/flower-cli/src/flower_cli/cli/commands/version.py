"""``flower version``: the same report as ``flower --version``."""

from __future__ import annotations

from .._help import FlowerCommand, epilog
from .._root_app import app
from .._versions import print_version

__all__ = ["version_cmd"]


@app.command("version", cls=FlowerCommand, epilog=epilog("flower --version", global_options=False))
def version_cmd() -> None:
    """Print the versions of flower's distributions, the SDK and the bundled Claude Code (= flower --version)."""
    print_version(True)
