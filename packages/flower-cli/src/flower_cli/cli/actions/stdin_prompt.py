"""A prompt from standard input: ``flower once -``, ``flower go -``, and ``echo hi | flower once``."""

from __future__ import annotations

import sys

from ..._shared.exits import Exit, ExitCode

__all__ = ["STDIN", "prompt_from"]

STDIN = "-"


def _read_all() -> str:
    stream = sys.stdin
    if stream is None:  # started with stdin closed
        return ""
    if stream.isatty():
        sys.stderr.write("(reading the prompt from the terminal; end it with Ctrl-D on a line of its own)\n")
        sys.stderr.flush()
    # Bytes, decoded here: a pipe's encoding is whatever the locale says, and a stray byte must not be a traceback.
    buffer = getattr(stream, "buffer", None)
    raw = buffer.read() if buffer is not None else stream.read().encode("utf-8", "surrogateescape")
    return str(raw.decode("utf-8", "replace"))


def prompt_from(given: str | None, *, command: str, example: str) -> tuple[str, bool]:
    """(the prompt, whether it came from stdin) for a PROMPT argument that may be ``-`` or absent.

    ``-`` reads stdin to its end; no argument reads a pipe (a terminal gets a usage error naming ``example``,
    it does not sit waiting for a prompt the person does not know it must type). An empty prompt is a usage
    error either way.
    """
    if given is not None and given != STDIN:
        return given, False
    if given is None and (sys.stdin is None or sys.stdin.isatty()):
        raise Exit(ExitCode.USAGE, f"{command}: say what to do, e.g. {example} (or pipe it: echo ... | {command})")
    text = _read_all()
    if not text.strip():
        raise Exit(
            ExitCode.USAGE, f"{command}: the prompt from stdin is empty; pipe the prompt in, or give it: {example}"
        )
    return text.strip("\n"), True
