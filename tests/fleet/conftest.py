"""The fleet tests' shared fixture: a `Fleet` (workers, `flower` as a subprocess) on the session's Temporal dev
server and PostgreSQL, with the scripted Messages API; its workers are stopped after the test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fleet_helpers import Fleet

from harness import ScriptedServer


@pytest.fixture
def fleet(
    claude_env: ScriptedServer, temporal_address: str, temporal_namespace: str, pg_url: str, tmp_path: Path
) -> Iterator[Fleet]:
    made = Fleet(tmp_path, temporal_address, pg_url, namespace=temporal_namespace)
    try:
        yield made
    finally:
        made.stop()
