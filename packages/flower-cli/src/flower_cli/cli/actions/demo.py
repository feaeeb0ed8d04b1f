"""``flower demo``: play the story (`flower_cli.demo`), then say what it did on stdout.

The acts' own progress (the real `flower` processes) streams to stderr as they run; the summary is the
command's result, so it goes to stdout (``flower demo > demo.txt`` keeps it).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from ..._shared.exits import Exit, ExitCode
from ...demo import DemoError, play_demo
from ...view import sanitize
from .demo_summary import summary_lines
from .output import write_stdout

if TYPE_CHECKING:
    from .._global_options import GlobalOptions

__all__ = ["run_demo"]


def run_demo(opts: GlobalOptions, folder: Path | None) -> None:
    """Play the demo in ``folder`` (default: a new temporary folder, kept for the person to look into)."""
    if opts.json:
        raise Exit(
            ExitCode.USAGE,
            "--json does not apply to flower demo (it shows a run to a person); `flower --json go` streams a run's events",
        )
    where = _folder(folder)
    for given, name in (
        (opts.workbench, "-W"),
        (opts.trim, "-T"),
        (opts.store is not None, "--store/FLOWER_STORE_URL"),
    ):
        if given:
            _say(f"  ! {name} does not apply to flower demo: it plays in its own folder with its own settings")
    _say(f"flower demo: a scripted model on 127.0.0.1 plays every part; the real flower and Claude Code run in {where}")
    try:
        run = play_demo(where, _say)
    except DemoError as exc:
        raise Exit(ExitCode.NOT_DONE, f"the demo did not play as scripted: {exc}; what it left is in {where}") from None
    write_stdout("\n" + "\n".join(summary_lines(run)) + "\n")


def _folder(given: Path | None) -> Path:
    """The demo's folder: ``--dir`` (new or empty, so nothing of the person's is mixed in), else a new temp one."""
    if given is None:
        return Path(tempfile.mkdtemp(prefix="flower-demo-"))
    folder = given.expanduser().resolve()
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise Exit(ExitCode.USAGE, f"--dir {folder} is not an empty folder: give a new or empty one")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise Exit(
            ExitCode.CONFIG, f"cannot create {folder} ({exc.strerror or exc}): give --dir another folder"
        ) from exc
    return folder


def _say(line: str) -> None:
    sys.stderr.write("\n" + sanitize(line) + "\n")
    sys.stderr.flush()
