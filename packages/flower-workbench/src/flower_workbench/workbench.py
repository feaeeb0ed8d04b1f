"""The workbench: a small on-disk tree every agent of a run shares, and the index the main agent is shown."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

from ._files import atomic_write_text
from ._index import Entry, Fingerprint, Listing, fingerprint, list_files, render_index, scan

__all__ = ["Workbench"]

ARTIFACT_THRESHOLD = 2000  # characters; the prompt's rule 2 — longer outputs belong in artifacts/

_SECTIONS = (  # (directory, INDEX.md heading, prompt-block heading)
    ("scripts", "Reusable scripts", "Scripts"),
    ("artifacts", "Artifacts", "Artifacts"),
    ("notes", "Decision notes", "Notes"),
)


@dataclass
class Workbench:
    """``<workspace>/.flower`` (or ``home``): ``scripts/ artifacts/ notes/ spill/`` and a generated ``INDEX.md``.

    ``external`` when the root is outside the workspace: then every path given to the model is absolute, and
    an SDK app must pass the root in ``add_dirs`` or the harness refuses writes there.
    """

    workspace: Path
    dirname: str = ".flower"
    max_index_entries: int = 40
    home: Path | None = None
    _seen: Fingerprint | None = field(default=None, init=False, repr=False, compare=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.workspace = Path(self.workspace).expanduser().resolve()
        if self.home is not None:
            self.home = Path(self.home).expanduser()
            if not self.home.is_absolute():
                self.home = self.workspace / self.home
            self.home = self.home.resolve()
        if self.max_index_entries < 1:
            raise ValueError(f"max_index_entries must be at least 1, not {self.max_index_entries}")

    @classmethod
    def beside(cls, workspace: Path | str, **kwargs: object) -> Workbench:
        """The placement for worktree isolation: ``<workspace parent>/.flower-<workspace name>/``.

        Worktrees are each agent's private copy of the repository; the workbench is what they share, so it
        cannot live inside any one of them.
        """
        ws = Path(workspace).expanduser().resolve()
        return cls(ws, home=ws.parent / f".flower-{ws.name}", **kwargs)  # type: ignore[arg-type]

    # -- the tree ------------------------------------------------------------------------------------------

    @property
    def root(self) -> Path:
        return self.home if self.home is not None else self.workspace / self.dirname

    @property
    def external(self) -> bool:
        return not self.root.is_relative_to(self.workspace)

    @property
    def scripts(self) -> Path:
        return self.root / "scripts"

    @property
    def artifacts(self) -> Path:
        return self.root / "artifacts"

    @property
    def notes(self) -> Path:
        return self.root / "notes"

    @property
    def spill(self) -> Path:
        return self.root / "spill"

    @property
    def index_path(self) -> Path:
        return self.root / "INDEX.md"

    def show(self, path: Path | str) -> str:
        """``path`` as the model should see it: workspace-relative inside the workspace, else absolute."""
        p = Path(path)
        if not p.is_absolute():
            p = self.workspace / p
        if not self.external and p.is_relative_to(self.workspace):
            return p.relative_to(self.workspace).as_posix()
        return str(p)

    def ensure(self) -> Workbench:
        for directory in (self.scripts, self.artifacts, self.notes):
            directory.mkdir(parents=True, exist_ok=True)
        return self

    # -- the index -----------------------------------------------------------------------------------------

    def entries(self) -> list[tuple[str, list[Entry]]]:
        """Each section's directory name and its files, in index order."""
        return self._entries(self._listings())

    def refresh(self) -> str:
        """Rewrite INDEX.md from what is on disk (atomically; untouched when nothing changed); return its text."""
        self.ensure()
        with self._lock:
            return self._write_index(self._listings())

    def refresh_if_changed(self) -> bool:
        """Refresh only when a file was added, removed or changed since the last refresh. True if it ran."""
        with self._lock:
            listings = self._listings()
            if self._seen is not None and fingerprint(listings) == self._seen and self.index_path.exists():
                return False
            self.ensure()
            self._write_index(listings)
            return True

    def _listings(self) -> list[Listing]:
        return [list_files(self.root / name) for name, _, _ in _SECTIONS]

    def _entries(self, listings: list[Listing]) -> list[tuple[str, list[Entry]]]:
        return [(name, scan(files, self.show)) for (name, _, _), files in zip(_SECTIONS, listings)]

    def _write_index(self, listings: list[Listing]) -> str:
        entries = self._entries(listings)
        text = render_index([(heading, found) for (_, heading, _), (_, found) in zip(_SECTIONS, entries)])
        try:
            unchanged = self.index_path.read_text(encoding="utf-8") == text
        except (OSError, UnicodeDecodeError):
            unchanged = False
        if not unchanged:
            atomic_write_text(self.index_path, text)
        self._seen = fingerprint(listings)
        return text

    # -- the prompt block ----------------------------------------------------------------------------------

    def prompt_block(self) -> str:
        """A short block for the main agent: what already exists (use it, don't rewrite it) and three rules."""
        self.ensure()
        lines = [f"# Workbench {self.show(self.root)}/", ""]
        if self.external:
            lines += [
                f"It lives **outside the repository** (`{self.root}`) on purpose, so every agent reads and writes "
                "the same one whatever working copy it is in. **Use absolute paths for it.**",
                "",
            ]
        listed = False
        lines.append("Already here — **use it, do not rewrite it**:")
        for (name, _, title), (_, entries) in zip(_SECTIONS, self.entries()):
            if not entries:
                continue
            listed = True
            lines += ["", f"{title}:"]
            lines += [entry.line() for entry in entries[: self.max_index_entries]]
            hidden = len(entries) - self.max_index_entries
            if hidden > 0:
                lines.append(f"- …and {hidden} more: `ls {self.show(self.root / name)}/`")
        if not listed:
            lines.append("(empty so far)")
        lines += [
            "",
            "Rules:",
            f"1. Scripts you will run again go in `{self.show(self.scripts)}/`, named by what they do, with "
            "`# desc: one sentence` as the first line.",
            f"2. Output over {ARTIFACT_THRESHOLD} characters (logs, data, reports, diffs) goes in "
            f"`{self.show(self.artifacts)}/`; the conversation carries only the path and the conclusion.",
            f"3. Key decisions and why they were made go in `{self.show(self.notes)}/`, one decision per file.",
        ]
        return "\n".join(lines)
