"""Trimming: move old large tool results to spill files and leave a one-line pointer behind."""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Sequence
from os import PathLike
from pathlib import Path
from typing import Any

from ._entries import Entry, all_but_newest, block_text, blocks, replace_blocks
from ._policies import TrimPolicy
from ._report import LoadReport
from ._rewritten import Rewritten

__all__ = ["spill_path", "trim"]


def spill_path(text: str, policy: TrimPolicy, workspace: str | PathLike[str]) -> Path:
    """Where `trim` keeps ``text``: ``<workspace>/<spill_dirname>/<sha256(text)[:16]>.txt``.

    The name is the content's hash, so the same result always lands in the same file, whichever process or
    load writes it.
    """
    base = Path(policy.spill_dirname).expanduser()
    directory = base if base.is_absolute() else Path(workspace) / base
    return directory / f"{hashlib.sha256(text.encode('utf-8', 'surrogatepass')).hexdigest()[:16]}.txt"


def _write_once(path: Path, text: str) -> bool:
    """Write ``text`` to ``path`` unless it is there already; atomically, so readers never see half a file."""
    if path.exists():
        return True
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(text, encoding="utf-8", errors="surrogatepass")
        os.replace(tmp, path)
    except OSError:
        return False
    return True


def _shown(path: Path, workspace: Path) -> str:
    try:
        return path.relative_to(workspace).as_posix()
    except ValueError:
        return str(path)  # an absolute spill_dirname outside the workspace (the original crashed here)


def trim(
    entries: Sequence[Entry],
    policy: TrimPolicy | None = None,
    workspace: str | PathLike[str] = ".",
    *,
    write_spill: bool = True,
) -> Rewritten:
    """Replace all but the newest ``policy.keep_recent`` large tool results by a pointer to a spill file.

    A result is large when its text has at least ``policy.min_chars`` characters; results holding images or
    documents are never trimmed, nor are compact summaries and meta entries. The spill file is written first
    (``write_spill=False`` only computes the rewrite); if it cannot be written, that result stays as it is —
    a pointer to nothing would lose the text. The input is not modified.
    """
    policy = policy or TrimPolicy()
    if not policy.enabled:
        return Rewritten(list(entries), LoadReport())  # type: ignore[arg-type]
    root = Path(workspace).expanduser().resolve()
    sites: list[tuple[int, int, str]] = []
    min_chars = policy.min_chars
    for i, entry in enumerate(entries):
        if entry.get("type") != "user" or entry.get("isCompactSummary") or entry.get("isMeta"):
            continue  # tool results live in user entries
        for j, block in enumerate(blocks(entry)):
            if type(block) is dict and block.get("type") == "tool_result":
                text = block_text(block)
                if text is not None and len(text) >= min_chars:
                    sites.append((i, j, text))
    targets = all_but_newest(sites, policy.keep_recent)
    out: list[Any] = list(entries)
    trimmed = saved = 0
    by_entry: dict[int, dict[int, str]] = {}
    for i, j, text in targets:
        path = spill_path(text, policy, root)
        if write_spill and not _write_once(path, text):
            continue
        pointer = policy.placeholder(_shown(path, root), len(text))
        by_entry.setdefault(i, {})[j] = pointer
        trimmed += 1
        saved += max(len(text) - len(pointer), 0)
    for i, replacements in by_entry.items():
        content = list(out[i]["message"]["content"])
        for j, pointer in replacements.items():
            content[j] = {**content[j], "content": pointer}
        out[i] = replace_blocks(out[i], content)
    return Rewritten(out, LoadReport(trimmed=trimmed, kept=len(sites) - len(targets), chars_saved=saved))
