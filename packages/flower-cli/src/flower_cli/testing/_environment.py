"""The environment that points the real Claude Code binary at a scripted server, and at nothing else.

The binary reads its endpoint, credential and behaviour from environment variables and from files under
``HOME``. Offline means: the scripted server's URL, a dummy key, no retries of its own, no side traffic
(telemetry, update checks), a fresh ``HOME``, and none of the caller's variables that would send a request
elsewhere (``CLAUDE_CODE_USE_BEDROCK``, ``ANTHROPIC_AUTH_TOKEN``, ``FLOWER_STORE_URL``, …).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

__all__ = ["DUMMY_API_KEY", "offline_environment"]

# A key of the right shape (``sk-ant-`` is read as an API key, anything else as a gateway token) that no
# real endpoint accepts.
DUMMY_API_KEY = "sk-ant-test-0000000000000000"

# The caller's variables that would leak credentials, settings or another endpoint into the run: the
# Anthropic and Claude Code ones, flower's own (a shared store, a window), the cloud providers' (Bedrock,
# Vertex) and telemetry.
_LEAKY_PREFIXES = ("ANTHROPIC_", "CLAUDE_", "FLOWER_", "AWS_", "GOOGLE_", "OTEL_")
_LEAKY_NAMES = frozenset(
    {"CLAUDECODE", "XDG_CONFIG_HOME", "DISABLE_AUTOUPDATER", "DISABLE_AUTO_COMPACT", "DISABLE_COMPACT"}
)


def offline_environment(url: str, home: Path, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: this process's environment) made to run Claude Code against the server at ``url``.

    Leaky variables are dropped; then ``ANTHROPIC_BASE_URL=url``, a dummy ``ANTHROPIC_API_KEY``,
    ``CLAUDE_CODE_MAX_RETRIES=0`` (the binary gives up on the first failed request, so a scripted failure is
    met by flower's own retries, not hidden by the binary's), ``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1``,
    ``DISABLE_AUTOUPDATER=1``, ``HOME=home`` and ``XDG_CONFIG_HOME=home/.config`` (no user settings, no
    flower credentials file), and ``FLOWER_NO_UPDATE=1`` / ``FLOWER_NO_PROBE=1`` (a ``flower`` command started
    with it asks no package index and sends no credential probe). Pass it as a subprocess's ``env``, or set it.
    """
    source = os.environ if base is None else base
    env = {
        name: value
        for name, value in source.items()
        if not name.startswith(_LEAKY_PREFIXES) and name not in _LEAKY_NAMES
    }
    env.update(
        {
            "ANTHROPIC_BASE_URL": url,
            "ANTHROPIC_API_KEY": DUMMY_API_KEY,
            "CLAUDE_CODE_MAX_RETRIES": "0",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "FLOWER_NO_UPDATE": "1",
            "FLOWER_NO_PROBE": "1",
        }
    )
    return env
