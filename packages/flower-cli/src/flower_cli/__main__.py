"""``python -m flower_cli`` and the ``flower`` console script."""

from __future__ import annotations

import sys

from ._shared.version import __version__
from .cli import around_command
from .cli import main as _main

__all__ = ["main"]


def main() -> None:
    # The update notice lives here, at the console entry, not in app.main(): programs and tests that call
    # app.main() in-process never get a network check or an extra stderr line.
    sys.exit(around_command(sys.argv[1:], __version__, _main))


if __name__ == "__main__":
    main()
