"""Commands other distributions add to ``flower``: each installed distribution that declares an entry point in
the ``flower_cli.commands`` group (name = the command, value = ``module:typer_app``) becomes ``flower NAME``.

Why an entry-point group: the heavy optional parts (flower-fleet pulls in the Temporal SDK) stay out of
``pip install flower-cli``, yet their commands appear as soon as they are installed. The plugin's module is
imported only when its command is named (or the full help is asked for), so it must itself import only typer
at the top, like flower-cli's own commands.
"""

from __future__ import annotations

import sys
from importlib import metadata
from typing import Any

import typer

__all__ = ["KNOWN_PLUGINS", "PLUGIN_GROUP", "install_plugins", "missing_plugin", "plugin_names"]

PLUGIN_GROUP = "flower_cli.commands"
# The commands flower knows of although another distribution brings them: without it installed, the command
# says what to install instead of becoming a `flower go` request.
KNOWN_PLUGINS: dict[str, str] = {"fleet": "flower-fleet"}


def _entry_points() -> dict[str, metadata.EntryPoint]:
    return {ep.name: ep for ep in metadata.entry_points(group=PLUGIN_GROUP)}


def plugin_names() -> tuple[str, ...]:
    """The commands flower may have beyond its own: the known plugins and any installed one."""
    return tuple(sorted(set(KNOWN_PLUGINS) | set(_entry_points())))


def missing_plugin(command: str) -> str | None:
    """One line saying what to install, when ``command`` is a known plugin command that is not installed."""
    if command in KNOWN_PLUGINS and command not in _entry_points():
        dist = KNOWN_PLUGINS[command]
        # From the repository: the distributions are not published on an index yet, and a `pip install NAME`
        # would fetch whatever a stranger registered under that name.
        return (
            f"`flower {command}` comes with {dist}, which is not installed: in a checkout of flower, "
            f"pip install ./packages/{dist} (it is not on PyPI yet)"
        )
    return None


def install_plugins(app: Any, only: str | None = None) -> None:
    """Add the installed plugins' typer apps to ``app`` (``only``: just that command's). Idempotent."""
    have = {group.name for group in app.registered_groups}
    for name, ep in _entry_points().items():
        if name in have or (only is not None and name != only):
            continue
        try:
            sub = ep.load()
        except Exception as exc:  # noqa: BLE001 - a broken plugin must not break every other command
            sys.stderr.write(f"flower: the `{name}` command of {ep.value} could not be loaded ({exc})\n")
            continue
        if isinstance(sub, typer.Typer):
            app.add_typer(sub, name=name)
