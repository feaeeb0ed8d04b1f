from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from env._sources import EnvSources


@pytest.fixture(autouse=True)
def restore_environ() -> Iterator[None]:
    """load_dotenv writes os.environ directly; give every test its environment back."""
    saved = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(saved)


@pytest.fixture
def sources(tmp_path: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> EnvSources:
    return EnvSources(tmp_path, isolated_home, monkeypatch)


@pytest.fixture
def write_file(tmp_path: Path) -> Callable[[str, bytes | str], Path]:
    def write(name: str, content: bytes | str) -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
        return path

    return write
