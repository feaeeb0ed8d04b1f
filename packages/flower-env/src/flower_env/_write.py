"""The storage side of ``flower setup``: merge values into the user .env, atomically, mode 0600."""

from __future__ import annotations

import contextlib
import io
import os
import re
import tempfile
from collections.abc import Mapping
from pathlib import Path

from dotenv.parser import parse_stream

from ._paths import user_env_path

__all__ = ["EnvFileError", "setup_values", "write_user_env"]


class EnvFileError(ValueError):
    """The user .env cannot be merged into safely; the message says which file and what to do."""


HEADER = "# flower credentials, written by `flower setup`. Keep this file out of version control.\n"
_PLAIN = re.compile(r"^[A-Za-z0-9_./:@+\-\[\],=]*$")


def _quote(value: str) -> str:
    if _PLAIN.match(value):
        return value
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def setup_values(token: str, base_url: str | None = None, model: str | None = None) -> dict[str, str | None]:
    """What setup stores for these answers. ``None`` means "remove the key".

    An ``sk-ant-`` token is an API key, anything else a gateway token; the other credential kind is removed
    from the file, so an old API key can no longer silently win over a new gateway token. A model name
    fills the three model keys.
    """
    values: dict[str, str | None] = {}
    if token.startswith("sk-ant-"):
        values["ANTHROPIC_API_KEY"], values["ANTHROPIC_AUTH_TOKEN"] = token, None
    else:
        values["ANTHROPIC_AUTH_TOKEN"], values["ANTHROPIC_API_KEY"] = token, None
    if base_url:
        values["ANTHROPIC_BASE_URL"] = base_url.rstrip("/")
    if model:
        for key in ("ANTHROPIC_MODEL", "ANTHROPIC_DEFAULT_OPUS_MODEL", "ANTHROPIC_DEFAULT_SONNET_MODEL"):
            values[key] = model
    return values


def write_user_env(values: Mapping[str, str | None], path: Path | None = None) -> Path:
    """Merge ``values`` into the user .env and return its path.

    Existing lines — other keys, comments — are kept in place; a key given here replaces its line (or is
    appended); a ``None`` value removes the key. The write is atomic (a reader sees the old file or the new
    one) and the file is readable by its owner only.
    """
    target = Path(path) if path is not None else user_env_path()
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        old = target.read_text(encoding="utf-8")
    except FileNotFoundError:
        old = ""
    except UnicodeDecodeError as exc:
        raise EnvFileError(
            f"{target} is not UTF-8; fix or move it, then run `flower setup` again (nothing was changed)"
        ) from exc
    except OSError as exc:
        raise EnvFileError(
            f"cannot read {target} ({exc.strerror or exc}); fix it, then run `flower setup` again (nothing was changed)"
        ) from exc
    pending = dict(values)
    lines: list[str] = []
    for binding in parse_stream(io.StringIO(old)):
        if binding.key is not None and binding.key in pending:
            new = pending.pop(binding.key)
            if new is not None:
                lines.append(f"{binding.key}={_quote(new)}\n")
            continue
        lines.append(
            binding.original.string if binding.original.string.endswith("\n") else binding.original.string + "\n"
        )
    if not old:
        lines = [HEADER, "\n"]
    lines += [f"{key}={_quote(value)}\n" for key, value in pending.items() if value is not None]
    fd, tmp = tempfile.mkstemp(prefix=".env.", suffix=".tmp", dir=target.parent)  # created 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.writelines(lines)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return target
