"""`tethered_cli_path`: a ``cli_path`` for ``ClaudeAgentOptions`` that ties Claude Code's life to its caller's.

The SDK starts ``cli_path`` with ``anyio.open_process`` and offers no hook into the spawn (no ``preexec_fn``,
no process group), so the tether has to *be* the program it starts: a two-line ``/bin/sh`` launcher that
execs ``python -I -S _tether.py <real claude>`` with the SDK's arguments (see ``_tether.py`` for what that
process does). The launcher is written once per (interpreter, package location, real binary) under a name
derived from its content, so every caller gets the same file and nobody rewrites it under a running one.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shlex
import shutil
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from claude_agent_sdk import ClaudeAgentOptions

__all__ = ["default_cli_path", "is_tethered", "tether", "tethered_cli_path"]

_MARK = "# flower-resilience tether launcher"
_TETHER = Path(__file__).with_name("_tether.py")
# Neither the SDK nor Windows can run a script as ``cli_path`` there (it refuses .bat/.cmd, and
# CreateProcess runs only an .exe): the tether is POSIX only, and elsewhere the real path comes back as is.
_SUPPORTED = os.name == "posix"


def default_cli_path() -> Path:
    """The Claude Code binary the SDK starts when ``cli_path`` is not set: the one in its wheel, else ``claude``
    on ``PATH`` and the usual install locations (raises the SDK's ``CLINotFoundError`` when there is none)."""
    from claude_agent_sdk import ClaudeAgentOptions  # why: the SDK loads only when a launch asks for the binary

    try:
        # The SDK's own search, so the answer is the SDK's whatever its version looks at.
        from claude_agent_sdk._internal.transport.subprocess_cli import SubprocessCLITransport

        return Path(SubprocessCLITransport(prompt="", options=ClaudeAgentOptions())._find_cli())
    except (ImportError, AttributeError):  # a future SDK moved it: the bundled binary, then PATH
        import claude_agent_sdk  # why: as above

        name = "claude.exe" if sys.platform == "win32" else "claude"
        bundled = Path(claude_agent_sdk.__file__).parent / "_bundled" / name
        found = str(bundled) if bundled.is_file() else shutil.which("claude")
        if found is None:
            from claude_agent_sdk import CLINotFoundError  # why: only on this failure path

            raise CLINotFoundError("Claude Code not found: install it or pass its path") from None
        return Path(found)


def is_tethered(cli_path: str | os.PathLike[str] | None) -> bool:
    """Is this a launcher `tethered_cli_path` wrote (so tethering it again would only nest a second tether)?"""
    if cli_path is None:
        return False
    try:
        with open(cli_path, "rb") as f:
            head = f.read(256)
    except OSError:
        return False
    return _MARK.encode() in head


def _resolve(real: str | os.PathLike[str] | None) -> Path:
    if real is None:
        return default_cli_path()
    text = os.fspath(real)
    if os.sep not in text:  # a bare name: the SDK would have looked it up on PATH, so do it now
        found = shutil.which(text)
        if found is None:
            raise FileNotFoundError(f"Claude Code not found: {text!r} is not on PATH; pass its full path")
        text = found
    path = Path(text).absolute()  # the launcher must work from any working directory
    if not path.is_file():
        raise FileNotFoundError(f"Claude Code not found at {path}")
    if not os.access(path, os.X_OK):
        raise PermissionError(f"Claude Code at {path} is not executable (chmod +x it)")
    return path


def _script(real: Path) -> str:
    python = sys.executable
    if not python:
        raise RuntimeError("cannot tether Claude Code: this Python does not know its own executable")
    if not _TETHER.is_file():
        raise RuntimeError(f"cannot tether Claude Code: {_TETHER} is not a file (a zipped install?)")
    # -I: no PYTHON* variable, user site or script directory changes what runs; -S: no site-packages
    # (nothing to import from them, and it is most of Python's start-up time).
    command = " ".join(shlex.quote(str(p)) for p in (python, "-I", "-S", _TETHER, real))
    return (
        "#!/bin/sh\n"
        f"{_MARK}: runs Claude Code under a watcher that ends it, and all it started,\n"
        "# when the process that started this one dies (flower_resilience.tethered_cli_path).\n"
        f'exec {command} "$@"\n'
    )


def _cache_directory() -> Path:
    if sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "flower-resilience" / "tether"


def _private_temp_directory() -> Path:
    """A per-user directory under the temp dir, refused if somebody else made it (or made it a symlink)."""
    path = Path(tempfile.gettempdir()) / f"flower-resilience-tether-{os.getuid()}"
    path.mkdir(mode=0o700, exist_ok=True)
    info = path.lstat()
    if not path.is_dir() or path.is_symlink() or info.st_uid != os.getuid():
        raise PermissionError(f"{path} is not a directory of this user's; pass tethered_cli_path(directory=...)")
    return path


def _noexec(directory: Path) -> bool:
    """Is ``directory`` on a filesystem mounted ``noexec`` (a hardened /tmp)? Then no launcher runs from it."""
    try:
        return bool(os.statvfs(directory).f_flag & getattr(os, "ST_NOEXEC", 0))
    except OSError:
        return False


def _write_once(directory: Path, script: str) -> Path:
    digest = hashlib.sha256(script.encode()).hexdigest()[:16]
    path = directory / f"claude-tether-{digest}"
    try:
        if path.read_text() == script and os.access(path, os.X_OK):
            return path
    except (OSError, UnicodeDecodeError):
        pass
    directory.mkdir(parents=True, exist_ok=True)
    if _noexec(directory):
        raise PermissionError(f"{directory} is on a noexec filesystem: a launcher there could not run")
    # Atomic: another process may be starting this very launcher; it sees the old file or the new, never half.
    fd, temp = tempfile.mkstemp(prefix=".claude-tether-", dir=directory)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(script)
        os.chmod(temp, 0o755)  # executable, and readable by an `options.user` the SDK may switch to
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return path


def tethered_cli_path(
    real: str | os.PathLike[str] | None = None, *, directory: str | os.PathLike[str] | None = None
) -> Path:
    """A launcher to pass as ``ClaudeAgentOptions(cli_path=...)``: it runs ``real`` (None: the binary the SDK
    would run, see `default_cli_path`) so that it, and every process it starts, ends when the process that
    started it dies, however it dies (``kill -9`` included).

    The launcher is written once into ``directory`` (default: ``$XDG_CACHE_HOME/flower-resilience/tether``,
    else a private directory under the temp dir) and reused; it runs the tether on this interpreter
    (``sys.executable``). On Windows nothing can be tethered: the real path comes back unchanged. A launcher
    given as ``real`` comes back as is. Raises ``FileNotFoundError`` or ``PermissionError`` (with what to do)
    when ``real`` is missing or not executable, or no directory can hold an executable launcher.
    """
    if real is not None and is_tethered(real):
        return Path(os.fspath(real))
    path = _resolve(real)
    if not _SUPPORTED:
        return path
    script = _script(path)
    if directory is not None:
        return _write_once(Path(directory), script)
    try:
        return _write_once(_cache_directory(), script)
    except OSError as exc:  # a read-only, missing or noexec home (a container): the temp dir
        try:
            return _write_once(_private_temp_directory(), script)
        except OSError:
            raise PermissionError(
                f"cannot write an executable Claude Code launcher ({exc}); pass tethered_cli_path(directory=...)"
            ) from exc


def tether(options: ClaudeAgentOptions, *, directory: str | os.PathLike[str] | None = None) -> ClaudeAgentOptions:
    """A copy of ``options`` whose ``cli_path`` is tethered (`tethered_cli_path` of its ``cli_path``); the
    given options are not changed, and options already tethered come back equal."""
    return dataclasses.replace(options, cli_path=tethered_cli_path(options.cli_path, directory=directory))
