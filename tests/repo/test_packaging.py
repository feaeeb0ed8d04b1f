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


def fresh_venv(env_dir: Path) -> tuple[Path, list[str]]:
    """A new venv with nothing in it, and the pip command that installs into it.

    Why the test environment's pip (``pip --python``) and no bytecode: a venv of its own pip costs ensurepip
    (3 s of CPU), and compiling every installed module costs more; neither is what these tests check, and on
    two cores the whole suite waits for that CPU. What lands in the venv is the same.
    """
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "--python", str(python), "--disable-pip-version-check"]
    return python, pip


# What each package must be able to do right after `pip install packages/<dist>` and nothing else.
SMOKE: dict[str, str] = {
    "flower-env": (
        "import os, pathlib, tempfile, flower_env as e; d = pathlib.Path(tempfile.mkdtemp()); p = d / '.env';"
        "e.write_user_env({'ANTHROPIC_API_KEY': 'sk-test'}, path=p); assert oct(p.stat().st_mode)[-3:] == '600';"
        "os.environ.pop('ANTHROPIC_API_KEY', None); e.load_dotenv(p); assert os.environ['ANTHROPIC_API_KEY'] == 'sk-test'"
    ),
    "flower-stores": (
        "import anyio, tempfile, pathlib, flower_stores as s;"
        "db = pathlib.Path(tempfile.mkdtemp()) / 'sessions.db'; st = s.SqliteSessionStore(db); k = {'project_key': 'p', 'session_id': 'x'};"
        "anyio.run(st.append, k, [{'type': 'user', 'uuid': 'u1'}]); assert anyio.run(st.load, k)[0]['uuid'] == 'u1';"
        "assert s.is_ephemeral('git status') and not s.is_ephemeral('rm -rf x')\n"
        # Without the postgres extra the package still imports, and the PostgreSQL store says what to install.
        "try:\n    s.store_from_url('postgresql://u@127.0.0.1:1/d'); raise SystemExit('no error without psycopg')\n"
        "except s.StoreError as exc:\n    assert str(exc).endswith(\"pip install 'flower-stores[postgres]'\"), exc"
    ),
    "flower-resilience": "import flower_resilience as r; assert r.classify('invalid x-api-key') == 'fatal'",
    "flower-workbench": (
        "import tempfile, flower_workbench as w; wb = w.Workbench(tempfile.mkdtemp());"
        "assert '## Reusable scripts (0)' in wb.refresh(); assert w.spill_guard(wb).matcher.startswith('Bash')"
    ),
}

PY_TYPED = "import importlib.resources as r, sys; m = sys.argv[1]; assert r.files(m).joinpath('py.typed').is_file(), m"
# The licence travels inside each wheel (hatchling puts the package's LICENSE into the dist-info).
LICENSED = (
    "import importlib.metadata as m, sys; d = sys.argv[1].replace('_', '-');"
    "assert any(str(f).endswith('LICENSE') for f in m.distribution(d).files or ()), d"
)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("dist", sorted(SMOKE))
def test_installs_alone_into_a_fresh_venv(dist: str, tmp_path: Path) -> None:
    python, pip = fresh_venv(tmp_path / "venv")
    install = subprocess.run(
        [*pip, "install", "--quiet", "--no-compile", str(ROOT / "packages" / dist)],
        capture_output=True,
        text=True,
        timeout=540,
    )
    assert install.returncode == 0, install.stderr[-3000:]
    module = dist.replace("-", "_")
    listed = subprocess.run([*pip, "list", "--format=freeze"], capture_output=True, text=True, check=True).stdout
    siblings = [line for line in listed.splitlines() if line.startswith("flower-") and not line.startswith(f"{dist}==")]
    assert not siblings, f"{dist} pulled in siblings: {siblings}"
    for script in (SMOKE[dist], PY_TYPED, LICENSED):
        run = subprocess.run(
            [str(python), "-c", script, module], capture_output=True, text=True, cwd=tmp_path, timeout=120
        )
        assert run.returncode == 0, run.stderr[-3000:]


@pytest.mark.timeout(900)
def test_flower_fleet_installs_with_its_siblings_and_mounts_flower_fleet(tmp_path: Path) -> None:
    """flower-fleet is no standalone library (it runs flower-cli's workflows): it installs with the siblings it
    declares, and its commands appear as `flower fleet`; flower-cli without it says what to install."""
    python, venv_pip = fresh_venv(tmp_path / "venv")
    pip = [*venv_pip, "install", "--quiet", "--no-compile"]
    siblings = [str(ROOT / "packages" / d) for d in ("flower-env", "flower-resilience", "flower-workbench")]
    base = subprocess.run(
        [*pip, *siblings, f"{ROOT / 'packages' / 'flower-stores'}[postgres]", str(ROOT / "packages" / "flower-cli")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert base.returncode == 0, base.stderr[-3000:]
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "FLOWER_NO_UPDATE": "1"}
    without = subprocess.run(
        [str(python), "-m", "flower_cli", "fleet", "status"], capture_output=True, text=True, env=env, timeout=120
    )
    assert without.returncode == 2 and "pip install ./packages/flower-fleet" in without.stderr, without.stderr
    fleet = subprocess.run([*pip, str(ROOT / "packages" / "flower-fleet")], capture_output=True, text=True, timeout=600)
    assert fleet.returncode == 0, fleet.stderr[-3000:]
    helped = subprocess.run(
        [str(python), "-m", "flower_cli", "fleet", "--help"], capture_output=True, text=True, env=env, timeout=120
    )
    assert helped.returncode == 0 and "submit" in helped.stdout, helped.stderr
    for script in (PY_TYPED, LICENSED):
        run = subprocess.run([str(python), "-c", script, "flower_fleet"], capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr[-3000:]


def test_each_distribution_carries_the_root_licence() -> None:
    root = (ROOT / "LICENSE").read_text()
    for package in sorted((ROOT / "packages").iterdir()):
        if (package / "pyproject.toml").is_file():
            copy = package / "LICENSE"
            assert copy.is_file() and copy.read_text() == root, f"cp LICENSE {copy.relative_to(ROOT)}"


def test_python_is_new_enough() -> None:
    assert sys.version_info >= (3, 11)
