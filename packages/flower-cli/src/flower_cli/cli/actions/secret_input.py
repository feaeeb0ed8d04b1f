"""Reading a secret (the API key) from stdin: not echoed on a terminal, a plain line from a pipe."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import TextIO

__all__ = ["read_secret_line"]


def read_secret_line(stream: TextIO | None = None, *, echo_to: TextIO | None = None) -> str:
    """One line from ``stream`` (stdin), without its newline; ``EOFError`` when input ended.

    On a terminal the typed characters are not shown (like ``getpass``, but on stdin itself, which is the
    terminal the person types on — ``getpass`` would open ``/dev/tty``, another device when stdin is not it).
    Echo is off before the line is read and restored afterwards, Ctrl-C included; the newline the person
    typed is written to ``echo_to`` (stderr) so the next prompt starts on its own line. From a pipe or a file
    it reads the line as it comes.
    """
    source = sys.stdin if stream is None else stream
    after = sys.stderr if echo_to is None else echo_to
    with _no_echo(source) as quiet:
        line = source.readline()
    if quiet:
        with contextlib.suppress(OSError, ValueError):
            after.write("\n")
            after.flush()
    if not line:
        raise EOFError
    return line.rstrip("\r\n")


@contextlib.contextmanager
def _no_echo(stream: TextIO) -> Iterator[bool]:
    """Echo off on ``stream``'s terminal for the body (yields True), or nothing when it is not a terminal."""
    try:
        import termios  # why: POSIX only; without it (Windows) the line is read as it comes, echoed

        fd = stream.fileno()
        if not stream.isatty():
            raise OSError("not a terminal")
        before = termios.tcgetattr(fd)
    except (ImportError, OSError, ValueError, AttributeError):  # a pipe, a file, a captured stream, Windows
        yield False
        return
    quiet = list(before)
    quiet[3] = quiet[3] & ~termios.ECHO
    # TCSANOW, not TCSAFLUSH: a line typed (or pasted) ahead must not be thrown away.
    termios.tcsetattr(fd, termios.TCSANOW, quiet)
    try:
        yield True
    finally:
        termios.tcsetattr(fd, termios.TCSANOW, before)
