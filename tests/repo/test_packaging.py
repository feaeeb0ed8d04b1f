"""Each library distribution installs into a fresh venv on its own and works there.

Other projects depend on just one of them (only the session stores, only the resilience layer), so none
may lean on a sibling or on anything the workspace happens to have installed.
"""

from __future__ import annotations

import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# What each package must be able to do right after `pip install packages/<dist>` and nothing else.
SMOKE: dict[str, str] = {
    "flower-env": "import flower_env; assert flower_env.__all__",
    "flower-stores": "import flower_stores; assert flower_stores.__all__",
    "flower-resilience": "import flower_resilience; assert flower_resilience.__all__",
    "flower-workbench": "import flower_workbench; assert flower_workbench.__all__",
}

PY_TYPED = "import importlib.resources as r, sys; m = sys.argv[1]; assert r.files(m).joinpath('py.typed').is_file(), m"


@pytest.mark.timeout(600)
@pytest.mark.parametrize("dist", sorted(SMOKE))
def test_installs_alone_into_a_fresh_venv(dist: str, tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(ROOT / "packages" / dist)],
        capture_output=True,
        text=True,
        timeout=540,
    )
    assert install.returncode == 0, install.stderr[-3000:]
    module = dist.replace("-", "_")
    listed = subprocess.run([str(python), "-m", "pip", "list", "--format=freeze"], capture_output=True, text=True, check=True).stdout
    siblings = [line for line in listed.splitlines() if line.startswith("flower-") and not line.startswith(f"{dist}==")]
    assert not siblings, f"{dist} pulled in siblings: {siblings}"
    for script in (SMOKE[dist], PY_TYPED):
        run = subprocess.run([str(python), "-c", script, module], capture_output=True, text=True, cwd=tmp_path, timeout=120)
        assert run.returncode == 0, run.stderr[-3000:]


def test_python_is_new_enough() -> None:
    assert sys.version_info >= (3, 11)
