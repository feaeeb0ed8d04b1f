"""The pytest plugin flower-cli installs (entry point ``pytest11``): the ``scripted_claude`` fixture.

pytest imports this module when it starts, and nothing else does, so pytest stays out of flower-cli's
dependencies. The server itself (``http.server`` and its imports, some 30 ms) is imported when a test first
asks for the fixture, not at every pytest start of a project that merely has flower-cli installed.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from ._environment import offline_environment

if TYPE_CHECKING:
    from ._server import ScriptedServer

__all__ = ["scripted_claude"]


@pytest.fixture
def scripted_claude(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[ScriptedServer]:
    """A started `ScriptedServer`, and this process's environment pointed at it for the length of the test.

    Everything that starts Claude Code in the test — a `Runtime`, a `Workflow`, ``claude_agent_sdk.query``, a
    ``flower`` subprocess — reaches this server and nothing else: `offline_environment` (the server's URL, a
    dummy key, no retries of the binary's own, no side traffic, a fresh ``HOME``; the caller's Anthropic,
    Claude Code, flower and cloud variables removed). Script it with ``scripted_claude.script(...)``; what
    it was sent is in ``scripted_claude.message_requests``.
    """
    from ._server import ScriptedServer  # here, not at the top: see the module's docstring

    home = tmp_path_factory.mktemp("claude-home")
    with ScriptedServer() as server:
        wanted = offline_environment(server.url, home)
        for name in list(os.environ):
            if name not in wanted:
                monkeypatch.delenv(name)
        for name, value in wanted.items():
            monkeypatch.setenv(name, value)
        yield server
