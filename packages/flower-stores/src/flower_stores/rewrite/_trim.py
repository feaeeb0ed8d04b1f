"""Trimming: move old large tool results to spill files and leave a one-line pointer behind."""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Sequence
from os import PathLike
from pathlib import Path
from typing import Any

from ..entries import Entry, all_but_newest, block_text, blocks, refusal, replace_blocks, replaced_content
from ..report import LoadReport, Rewritten
from ._policies import TrimPolicy

__all__ = ["spill_path", "trim"]


def _spill_name(text: str) -> str:
    return f"{hashlib.sha256(text.encode('utf-8', 'surrogatepass')).hexdigest()[:16]}.txt"


def _spill_dir(policy: TrimPolicy, workspace: str | PathLike[str]) -> Path:
    base = Path(policy.spill_dirname).expanduser()
    return base if base.is_absolute() else Path(workspace) / base


def spill_path(text: str, policy: TrimPolicy, workspace: str | PathLike[str]) -> Path:
    """Where `trim` keeps ``text``: ``<workspace>/<spill_dirname>/<sha256(text)[:16]>.txt``.

    The name is the content's hash, so the same result always lands in the same file, whichever process or
    load writes it.
    """
    return _spill_dir(policy, workspace) / _spill_name(text)


def _write_once(path: str, text: str) -> bool:
    """Write ``text`` to ``path`` unless it is there already; atomically, so readers never see half a file."""
    if os.path.exists(path):
        return True
    try:
        # Private (0700 folder, 0600 file), created so: a spilled tool output may hold anything the agent read.
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        tmp = os.path.join(
            os.path.dirname(path), f".{os.path.basename(path)}.{os.getpid()}.{threading.get_ident()}.tmp"
        )
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with open(fd, "w", encoding="utf-8", errors="surrogatepass") as f:
            f.write(text)
        os.replace(tmp, path)
    except OSError:
        return False
    return True


class Spiller:
    """The spill files of one load. The directory and the form it is shown in are worked out once; per result
    there is only a hash, one ``stat`` and, the first time, a write. (pathlib per result cost more than all
    the rest of trimming a 10,000-entry session.)"""

    def __init__(self, policy: TrimPolicy, workspace: Path) -> None:
        directory = _spill_dir(policy, workspace)
        self._policy = policy
        self._dir = str(directory)
        try:
            shown = directory.relative_to(workspace).as_posix()
        except ValueError:
            shown = str(directory)  # an absolute spill_dirname outside the workspace: the pointer shows it whole
        self._prefix = "" if shown == "." else shown + "/"

    def pointer(self, text: str, *, write: bool = True, template: str | None = None) -> str | None:
        """The pointer that replaces ``text`` (its spill file written first), or None to leave ``text`` alone:
        when the file cannot be written (a pointer to nothing would lose the text), or when the pointer would
        not be shorter than the text — which also keeps a short note another step wrote (an expired glance)
        from being spilled and counted twice. ``template``: another wording than the policy's (`fit`'s for a
        tool input), filled in the same way."""
        name = _spill_name(text)
        if template is None:
            pointer = self._policy.placeholder(self._prefix + name, len(text))
        else:
            pointer = template.format(path=self._prefix + name, chars=len(text))
        if len(pointer) >= len(text):
            return None
        if write and not _write_once(os.path.join(self._dir, name), text):
            return None
        return pointer


def trim(
    entries: Sequence[Entry],
    policy: TrimPolicy | None = None,
    workspace: str | PathLike[str] = ".",
    *,
    write_spill: bool = True,
) -> Rewritten:
    """Replace all but the newest ``policy.keep_recent`` large tool results by a pointer to a spill file
    (with ``policy.enabled`` False: only in a long session, see ``TrimPolicy.mask_over``).

    A result is large when its text has at least ``policy.min_chars`` characters; results holding images or
    documents are never trimmed, nor are compact summaries and meta entries, nor the harness's own words for a
    call that did not run (see `refusal`). Only the text moves: a list result keeps its other parts (a
    ``tool_reference``, a ``search_result``) beside the pointer. The spill file is written first
    (``write_spill=False`` only computes the rewrite); if it cannot be written, that result stays as it is —
    a pointer to nothing would lose the text. The input is not modified.
    """
    policy = policy or TrimPolicy()
    if not policy.applies(0) and policy.mask_over is None:
        return Rewritten(list(entries), LoadReport())  # type: ignore[arg-type]
    root = Path(workspace).expanduser().resolve()
    sites: list[tuple[int, int, str]] = []
    min_chars = policy.min_chars
    outputs = 0  # the text of every result that could be a site: whether a long session is masked
    for i, entry in enumerate(entries):
        if (
            type(entry) is not dict
            or entry.get("type") != "user"
            or entry.get("isCompactSummary")
            or entry.get("isMeta")
        ):
            continue  # tool results live in user entries
        for j, block in enumerate(blocks(entry)):
            if type(block) is dict and block.get("type") == "tool_result" and refusal(entry, block) is None:
                text = block_text(block)
                if text is not None:
                    outputs += len(text)
                if text is not None and len(text) >= min_chars:
                    sites.append((i, j, text))
    if not policy.applies(outputs):
        return Rewritten(list(entries), LoadReport())  # type: ignore[arg-type]
    targets = all_but_newest(sites, policy.keep_recent)
    out: list[Any] = list(entries)
    trimmed = saved = 0
    by_entry: dict[int, dict[int, str]] = {}
    spiller = Spiller(policy, root)
    for i, j, text in targets:
        pointer = spiller.pointer(text, write=write_spill)
        if pointer is None:
            continue
        by_entry.setdefault(i, {})[j] = pointer
        trimmed += 1
        saved += max(len(text) - len(pointer), 0)
    for i, replacements in by_entry.items():
        content = list(out[i]["message"]["content"])
        for j, pointer in replacements.items():
            content[j] = {**content[j], "content": replaced_content(content[j], pointer)}
        out[i] = replace_blocks(out[i], content)
    return Rewritten(out, LoadReport(trimmed=trimmed, kept=len(sites) - len(targets), chars_saved=saved))
