"""The session store a Runtime runs on, assembled: the layers over the backend (trim, prune, ephemeral), the
index that answers what flower asks of a store, and the mirror watch the SDK writes through.

Why here and not in the Runtime: what the store is (a URL, a bare SDK store, one of flower-stores' layers, the
default file) decides its policies, its name in messages, and whether load-time trimming follows the workbench.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from pathlib import Path

import anyio
from claude_agent_sdk import SessionKey, SessionStore, project_key_for_directory

import flower_stores
from flower_stores import (
    EphemeralPolicy,
    LoadReport,
    PrunePolicy,
    PruningSessionStore,
    TrimmingSessionStore,
    TrimPolicy,
)
from flower_workbench import Workbench

from ._mirror import MirrorWatch, quiet_sdk_mirror_log
from ._workbench import trim_policy

__all__ = ["RunStore"]


class RunStore:
    """``store`` (any SDK `SessionStore`, a store URL, or None for ``<run_dir>/sessions.db``) with a
    `PruningSessionStore` over it that ``trim``, ``ephemeral`` and ``keep_denials`` configure; a store that
    already is one of flower-stores' layers is used as it is (giving those three too is a ValueError).

    ``session_store`` is what the Runtime calls its store; ``mirror`` is what the SDK writes through.
    """

    def __init__(
        self,
        store: SessionStore | str | None,
        *,
        workspace: Path,
        run_dir: Path,
        trim: bool | TrimPolicy,
        ephemeral: bool | EphemeralPolicy,
        keep_denials: int,
        workbench: Workbench | None,
        offline_limit: float,
        log: Callable[[str], None],
    ) -> None:
        # Set when the layers were built here with a trim policy of our own, whose spill directory follows the
        # workbench (see use_workbench); None when the caller gave a TrimPolicy or a store object.
        self._trimming: tuple[PruningSessionStore, bool] | None = None
        self._layers: PruningSessionStore | TrimmingSessionStore | None = None  # the layers a budget goes to
        self._budget: int | None = None
        layered = isinstance(store, (PruningSessionStore, TrimmingSessionStore))
        if layered and (trim is not False or ephemeral is not True or keep_denials != 1):
            raise ValueError(
                "store= is already a layered store (PruningSessionStore/TrimmingSessionStore) with its own "
                "policies: give trim, ephemeral and keep_denials to it, not to the Runtime"
            )
        assembled: SessionStore
        if layered:
            assert store is not None and not isinstance(store, str)
            assembled = store
            self._layers = store if isinstance(store, (PruningSessionStore, TrimmingSessionStore)) else None
        else:  # a bare SDK store, a store URL (sqlite://…, postgresql://…) or the default file
            layers = PruningSessionStore(
                store or run_dir / "sessions.db",
                workspace,
                policy=trim if isinstance(trim, TrimPolicy) else trim_policy(bool(trim), workbench),
                prune=PrunePolicy(keep_denials=keep_denials),
                ephemeral=ephemeral
                if isinstance(ephemeral, EphemeralPolicy)
                else EphemeralPolicy(enabled=bool(ephemeral)),
            )
            if not isinstance(trim, TrimPolicy):
                self._trimming = (layers, bool(trim))
            assembled = layers
            self._layers = layers
        self.session_store: SessionStore = assembled
        self.project_key = project_key_for_directory(str(workspace))  # where the store keeps this workspace's sessions
        # What flower asks of a store beyond the SDK's protocol (has this session, this entry, how full is it):
        # the layers answer it over any backend, computing from ``load`` what a bare store cannot say.
        self.index: flower_stores.SessionIndex = flower_stores.session_index(assembled)
        # The SDK writes through this watch: no step is recorded while the store lacks what the harness wrote.
        self.mirror = _watch(assembled, store, run_dir, offline_limit)
        quiet_sdk_mirror_log(log)

    @property
    def where(self) -> str:
        """The store as a user may see it (never a password)."""
        return self.mirror.where

    def has_session(self, session_id: str) -> bool:
        return self.index.has_session(self.project_key, session_id)

    @property
    def raw(self) -> SessionStore:
        """The store beneath flower's load-time layers: transcripts as written (no rewrite, no spill)."""
        store: SessionStore = getattr(self.session_store, "backend", self.session_store)
        return store

    async def has_conversation(self, session_id: str) -> bool:
        """Does the store hold a user or assistant message of ``session_id``? What a resume needs: the harness
        answers "No conversation found" for a session stored with its bookkeeping entries only. Read raw: a
        question about what was written, not a load to send (the layers' rewrite would run, and spill)."""
        key: SessionKey = {"project_key": self.project_key, "session_id": session_id}
        entries = await self.raw.load(key)
        return any(type(e) is dict and e.get("type") in ("user", "assistant") for e in entries or ())

    def context_of(self, session_id: str) -> int:
        """The session's last context watermark (tokens), as the store has it."""
        return self.index.last_context(self.project_key, session_id)

    def has_entry(self, session_id: str, entry_uuid: str) -> bool:
        return self.index.has_entry(self.project_key, session_id, entry_uuid)

    async def holds(self, session_id: str, message_uuid: str | None, *, within: float = 5.0) -> None:
        """Wait (up to ``within`` seconds) until the store holds the main-thread message ``message_uuid``.

        The harness mirrors a message to the store a moment after it streams it. A session stopped in between —
        mid-turn, for a handoff, a Ctrl-C or a usage limit — would be resumed without the messages still in
        flight: the writing round, the human's words or the resume after the reset would follow a transcript that
        lost the turn's end. Before any main-thread message has streamed (``message_uuid`` None), it waits until
        the store holds the conversation at all: the prompt the harness was given. After ``within`` the stop goes
        ahead regardless.
        """
        deadline = time.monotonic() + within
        while True:
            try:
                if message_uuid:
                    held = self.has_entry(session_id, message_uuid)
                else:
                    held = await self.has_conversation(session_id)
                if held:
                    return
            except Exception:  # noqa: BLE001 - a store that cannot answer must not stop the step
                return
            if time.monotonic() >= deadline:
                return
            await anyio.sleep(0.05)

    def use_workbench(self, workbench: Workbench | None) -> None:
        """Load-time trimming spills where ``workbench`` does (on layers built here with trim=True/False)."""
        if self._trimming is not None:
            layers, enabled = self._trimming
            layers.policy = trim_policy(enabled, workbench)
            self.use_budget(self._budget)

    def use_budget(self, chars: int | None) -> None:
        """Every load fits ``chars`` characters (`flower_stores.fit`; None: no bound), so a resumed request can
        succeed. A budget the caller set on its own `TrimPolicy` is theirs and stays; a store without a trim
        policy (``trim=None`` layers of the caller's) gets one that only fits."""
        self._budget = chars
        layers = self._layers
        if layers is None or chars is None:
            return
        policy = layers.policy
        if policy is None:
            layers.policy = TrimPolicy(enabled=False, budget=chars)
        elif policy.budget is None or (self._trimming is not None and layers is self._trimming[0]):
            layers.policy = dataclasses.replace(policy, budget=chars)

    async def resume_report(self, session_id: str) -> LoadReport | None:
        """What a resume of ``session_id`` sends: the report of the layers' load, run here first (the harness's
        own load then rewrites the same way and finds the spill files written). None without layers or session."""
        layers = self._layers
        if layers is None:
            return None
        key: SessionKey = {"project_key": self.project_key, "session_id": session_id}
        if await layers.load(key) is None:
            return None
        return layers.last_report

    def for_sdk(self, store: SessionStore | None = None) -> SessionStore:
        """What the SDK writes through: the mirror watch over ``store`` (a lease's fenced view) or the store."""
        return self.mirror.wrapped(store if store is not None else self.session_store)

    def close(self) -> None:
        close = getattr(self.session_store, "close", None)
        if callable(close):
            close()


def _watch(store: SessionStore, given: object, run_dir: Path, offline_limit: float) -> MirrorWatch:
    """The store's watch, named as a user may see it and reach it again with ``--store``."""
    if isinstance(given, str):
        where, url = flower_stores.describe_store_url(given), given
        if url.lower().startswith(("postgresql:", "postgres:")):
            url = "'" + where + "'" if where != given else given  # never the password: the user fills it in
    else:
        backend = getattr(store, "backend", store)
        path = getattr(backend, "path", None)
        where = str(path) if path is not None else type(backend).__name__
        url = f"sqlite://{Path(path).resolve()}" if path is not None else ""
    return MirrorWatch(
        store, where=where, store_url=url or None, spool=run_dir / "unstored", offline_limit=offline_limit
    )
