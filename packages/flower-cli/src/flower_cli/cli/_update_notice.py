"""Telling the user that a newer flower exists, and how to upgrade — never upgrading anything.

Replacing the installed files from a background thread while a run uses them could load two versions into one
process, so this module only looks and tells:

- at most once a day it asks the package index for the latest version, in a daemon thread, so the command's
  start is not held up (the main thread only reads a small state file); the ask is bounded by a short
  timeout, and a failure (offline, DNS, a bad answer) is silent and waits for the next day too;
- at the end of the command, on stderr, one line — at most once a day per new version — says which version
  is out and the command that upgrades this installation (pip, pipx or uv tool);
- it is off when ``FLOWER_NO_UPDATE`` is set (any non-empty value), when ``CI`` is set, when ``DO_NOT_TRACK``
  or ``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC`` is, for ``--help``, ``--version`` and shell completion, and
  in a source checkout (an editable install: upgrading from the index would not change the code that runs,
  ``git pull`` does);
- it asks only about a distribution installed from an index, and believes the answer only when the published
  metadata names the repository this installation's metadata names (``_update_source.py`` says why).

State: ``${XDG_CONFIG_HOME:-~/.config}/flower/update-check.json`` (``checked``, ``latest``, ``notified``,
``notified_version``), written atomically. The index is ``FLOWER_UPDATE_URL`` (default: PyPI's JSON API for
``flower-cli``), which is also how the tests point it at a local server.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .._shared.files import atomic_write_text
from ._update_source import Installed, installed_distribution, names_repository, quiet_variable

__all__ = [
    "DEFAULT_INDEX_URL",
    "INTERVAL_S",
    "START_DELAY_S",
    "TIMEOUT_S",
    "UpdateCheck",
    "around_command",
    "installed_from_source",
    "is_newer",
    "parse_version",
    "state_path",
    "upgrade_command",
]

DISTRIBUTION = "flower-cli"
DEFAULT_INDEX_URL = f"https://pypi.org/pypi/{DISTRIBUTION}/json"
INTERVAL_S = 86400.0  # once a day: checks, and the notice for one version
TIMEOUT_S = 3.0  # the whole ask; it runs beside the command, so this bounds nothing the user waits for
# The check starts this long after the command: importing urllib/ssl in a thread right at start-up competes
# with the command's own imports for the GIL (measured: +70 ms on a short command). A command that is over
# sooner never checks, and a run that goes on checks while it waits on the model.
START_DELAY_S = 1.0
_QUIET_ARGS = frozenset({"-h", "--help", "--version", "-V", "--show-completion", "--install-completion"})
# Set by the shell while it asks for completions: the answer goes to the shell, not to a person.
_COMPLETION_VARIABLE = "_FLOWER_COMPLETE"


def state_path(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    base = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "flower" / "update-check.json"


def installed_from_source(module_file: str = __file__) -> bool:
    """True for a source checkout (an editable install runs the files in the checkout, not in site-packages).

    A string test on this module's own path — no metadata scan, so it costs nothing at start-up.
    """
    parts = Path(module_file).parts
    return "site-packages" not in parts and "dist-packages" not in parts


def parse_version(text: str) -> tuple[int, ...] | None:
    """A final release ``1.2.3`` as a tuple; None for pre-releases, dev builds and anything else."""
    pieces = text.strip().split(".")
    if not pieces or not all(p.isdigit() for p in pieces):
        return None
    return tuple(int(p) for p in pieces)


def is_newer(latest: str, current: str) -> bool:
    new, old = parse_version(latest), parse_version(current)
    if new is None or old is None:
        return False
    width = max(len(new), len(old))
    return new + (0,) * (width - len(new)) > old + (0,) * (width - len(old))


def upgrade_command(prefix: str | None = None, executable: str | None = None) -> str:
    """How this installation upgrades: through the tool that installed it (pipx, uv tool) or pip."""
    prefix = sys.prefix if prefix is None else prefix
    normal = prefix.replace("\\", "/")
    if "/pipx/venvs/" in normal:
        return f"pipx upgrade {DISTRIBUTION}"
    if "/uv/tools/" in normal:
        return f"uv tool upgrade {DISTRIBUTION}"
    return f"{shlex.quote(executable or sys.executable)} -m pip install --upgrade {DISTRIBUTION}"


@dataclass
class _State:
    checked: float = 0.0
    latest: str | None = None
    notified: float = 0.0
    notified_version: str | None = None

    @classmethod
    def read(cls, path: Path) -> _State:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return cls()  # missing or damaged: as if never checked (it is rewritten whole next time)
        if not isinstance(data, dict):
            return cls()
        state = cls()
        for name, kind in (
            ("checked", (int, float)),
            ("notified", (int, float)),
            ("latest", str),
            ("notified_version", str),
        ):
            value = data.get(name)
            if isinstance(value, kind) and not isinstance(value, bool):
                setattr(state, name, value)
        return state


def _fetch_latest(url: str, timeout: float, current: str, repository: str) -> str | None:
    """The index's latest final version, when its metadata names ``repository``; else None."""
    import urllib.request  # why: ~18 ms (http.client, ssl) that only a due check, in its own thread, needs

    request = urllib.request.Request(
        url, headers={"Accept": "application/json", "User-Agent": f"{DISTRIBUTION}/{current} update-check"}
    )
    with urllib.request.urlopen(request, timeout=timeout) as response:
        data = json.loads(response.read(2_000_000))
    info = data.get("info") if isinstance(data, dict) else None
    if not isinstance(info, dict) or not names_repository(info, repository):
        return None  # another project under the same name: nothing it publishes is an upgrade of this one
    version = info.get("version")
    return version if isinstance(version, str) and parse_version(version) else None


class UpdateCheck:
    """One command's check: `begin` when the command starts, `end` when it is over (returns the notice, if any)."""

    def __init__(
        self,
        current: str,
        *,
        env: Mapping[str, str] | None = None,
        path: Path | None = None,
        source_checkout: bool | None = None,
        installation: Installed | None = None,
        clock: Callable[[], float] = time.time,
        timeout: float = TIMEOUT_S,
        delay: float = START_DELAY_S,
    ) -> None:
        self.env = os.environ if env is None else env
        self.current = current
        self.path = path or state_path(self.env)
        self.url = self.env.get("FLOWER_UPDATE_URL") or DEFAULT_INDEX_URL
        self.source_checkout = installed_from_source() if source_checkout is None else source_checkout
        self.installation = installation  # None: read from the metadata, once the cheaper reasons are past
        self.clock = clock
        self.timeout = timeout
        self.delay = delay
        self.thread: threading.Thread | None = None
        self._ending = threading.Event()
        self._lock = threading.Lock()  # one writer of the state file at a time within this process
        self._on = False

    def off_reason(self, args: Sequence[str] = ()) -> str | None:
        quiet = quiet_variable(self.env)
        if quiet:
            return f"{quiet} is set"
        if _QUIET_ARGS & set(args) or next((a for a in args if not a.startswith("-")), None) == "version":
            return "help or version"
        if self.env.get(_COMPLETION_VARIABLE):
            return "shell completion"
        if self.source_checkout:
            return "a source checkout (upgrade it with git)"
        return self._installation_reason()

    def _installation_reason(self) -> str | None:
        if self.installation is None:
            self.installation = installed_distribution(DISTRIBUTION)
        if self.installation is None:
            return f"{DISTRIBUTION} is not installed (run from a checkout)"
        if not self.installation.from_index:
            return "installed from a path or a URL, not from the index (reinstall from there to upgrade)"
        if not self.installation.repository:
            return "its metadata names no repository to check the index's answer against"
        return None

    def begin(self, args: Sequence[str] = ()) -> None:
        """Cheap: one small file read, and a daemon thread when a day has passed since the last check."""
        if self.off_reason(args):
            return
        self._on = True
        state = _State.read(self.path)
        if self.clock() - state.checked >= INTERVAL_S or state.checked > self.clock():
            self.thread = threading.Thread(target=self._check, name="flower-update-check", daemon=True)
            self.thread.start()

    def _check(self) -> None:
        if self._ending.wait(self.delay):
            return  # the command was over before the check was due to start: leave it for the next one
        try:
            repository = self.installation.repository if self.installation else ""
            latest = _fetch_latest(self.url, self.timeout, self.current, repository)
        except Exception:  # noqa: BLE001 - offline, refused, timed out, garbage: all silent, try again tomorrow
            latest = None
        with self._lock:
            state = _State.read(self.path)
            state.checked = self.clock()
            if latest is not None:
                state.latest = latest
            self._write(state)

    def _write(self, state: _State) -> None:
        try:
            atomic_write_text(self.path, json.dumps(asdict(state)) + "\n")
        except OSError:
            pass  # an unwritable config dir only means we ask again next time

    def end(self) -> str | None:
        """The notice to show now (and remember it was shown), or None. Never waits for the index."""
        if not self._on:
            return None
        self._ending.set()
        with self._lock:  # waits only if the check thread is writing the state this very moment
            state = _State.read(self.path)
            latest = state.latest
            if latest is None or not is_newer(latest, self.current):
                return None
            now = self.clock()
            if state.notified_version == latest and 0 <= now - state.notified < INTERVAL_S:
                return None
            state.notified, state.notified_version = now, latest
            self._write(state)
        return (
            f"flower {latest} is available (this is {self.current}). Upgrade with: {upgrade_command()}"
            "  (FLOWER_NO_UPDATE=1 turns this notice off)"
        )


def around_command(args: Sequence[str], current: str, run: Callable[[], int], err: Any = None) -> int:
    """Run a command with the check beside it; print the notice (if any) on stderr when it is over."""
    check = UpdateCheck(current)
    check.begin(args)
    try:
        return run()
    finally:
        notice = check.end()
        if notice:
            (err or sys.stderr).write(notice + "\n")
