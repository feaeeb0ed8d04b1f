"""The update check's conditions: it believes an index only about this project (the published metadata names
this installation's repository), asks only about a distribution installed from an index, and stays quiet when
DO_NOT_TRACK or CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC says so."""

from __future__ import annotations

import json
from importlib import metadata
from pathlib import Path

import pytest

from flower_cli.cli._update_notice import UpdateCheck
from flower_cli.cli._update_source import (
    Installed,
    installation_of,
    names_repository,
    normal_repository,
    quiet_variable,
)

REPO = "https://example.org/flower/flower"


def _dist_info(tmp_path: Path, *, direct_url: bool, urls: list[str]) -> metadata.Distribution:
    """An installed distribution's metadata on disk, as pip writes it."""
    info = tmp_path / "flower_cli-9.0.0.dist-info"
    info.mkdir()
    lines = ["Metadata-Version: 2.3", "Name: flower-cli", "Version: 9.0.0", *(f"Project-URL: {u}" for u in urls)]
    (info / "METADATA").write_text("\n".join(lines) + "\n")
    if direct_url:  # pip install ./packages/flower-cli, a wheel file, or git+https://…
        (info / "direct_url.json").write_text(
            json.dumps({"url": "file:///src/flower/packages/flower-cli", "dir_info": {}})
        )
    return metadata.PathDistribution(info)


def test_an_installation_from_an_index_names_its_repository(tmp_path: Path) -> None:
    dist = _dist_info(
        tmp_path, direct_url=False, urls=["Documentation, https://example.org/docs", f"Repository, {REPO}"]
    )
    assert installation_of(dist) == Installed(from_index=True, repository=REPO)


def test_an_installation_from_a_path_or_url_is_not_from_an_index(tmp_path: Path) -> None:
    dist = _dist_info(tmp_path, direct_url=True, urls=[])
    assert installation_of(dist) == Installed(from_index=False, repository="")


@pytest.mark.parametrize(
    ("published", "ours"),
    [
        ({"Repository": REPO}, True),
        ({"repository": REPO + ".git"}, True),
        ({"Source": "http://www.EXAMPLE.org/flower/flower/"}, True),
        ({"Repository": "https://example.org/someone-else/flower-cli"}, False),  # the same name, another project
        ({"Homepage": REPO}, False),  # a page, not the repository
        ({}, False),
    ],
)
def test_the_published_metadata_must_name_our_repository(published: dict[str, str], ours: bool) -> None:
    assert names_repository({"version": "9.9.9", "project_urls": published}, REPO) is ours
    assert names_repository({"version": "9.9.9", "project_urls": None}, REPO) is False
    assert names_repository({"project_urls": published}, "") is False, "an installation naming none believes none"


def test_normal_repository() -> None:
    assert normal_repository("https://www.Example.org/a/b.git/") == normal_repository("http://example.org/a/b")


@pytest.mark.parametrize(
    ("env", "quiet"),
    [
        ({}, None),
        ({"DO_NOT_TRACK": "1"}, "DO_NOT_TRACK"),
        ({"DO_NOT_TRACK": "0"}, None),
        ({"DO_NOT_TRACK": "false"}, None),
        ({"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"),
        ({"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "true"}, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"),
        ({"FLOWER_NO_UPDATE": "yes"}, "FLOWER_NO_UPDATE"),
        ({"CI": "1"}, "CI"),
    ],
)
def test_the_variables_that_keep_it_quiet(env: dict[str, str], quiet: str | None) -> None:
    assert quiet_variable(env) == quiet


def test_an_index_answering_for_another_project_is_not_believed(tmp_path: Path) -> None:
    """Over loopback: the index answers a newer version of a package that names another repository."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from threading import Thread

    answers = {
        "/stranger": {"info": {"version": "99.0.0", "project_urls": {"Repository": "https://example.org/x/y"}}},
        "/ours": {"info": {"version": "99.0.0", "project_urls": {"Repository": REPO}}},
    }

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = json.dumps(answers[self.path]).encode()
            self.send_response(200)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    Thread(target=server.serve_forever, daemon=True).start()
    try:
        told = {}
        for path in answers:
            env = {
                "XDG_CONFIG_HOME": str(tmp_path / path.strip("/")),
                "FLOWER_UPDATE_URL": f"http://127.0.0.1:{server.server_address[1]}{path}",
            }
            check = UpdateCheck("0.1.0", env=env, source_checkout=False, installation=Installed(True, REPO), delay=0)
            check.begin(["once"])
            assert check.thread is not None
            check.thread.join(10)
            told[path] = check.end()
    finally:
        server.shutdown()
        server.server_close()
    assert told["/stranger"] is None, "a stranger's package is never an upgrade"
    assert told["/ours"] is not None and told["/ours"].startswith("flower 99.0.0 is available")
