"""Whether the update check may ask the package index about this installation, and whether the index's
answer is about this project at all.

A name on a public index belongs to whoever registered it first. Until flower's distributions are published,
``flower-cli`` on PyPI is anyone's — and a notice "flower 9.9 is available, upgrade with pip" would send users
to a stranger's package. So the check asks only:

- when no variable says to stay quiet: ``FLOWER_NO_UPDATE``, ``DO_NOT_TRACK`` (the cross-tool convention),
  ``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC`` (Claude Code's own switch for traffic that is not the work),
  ``CI``;
- for a distribution that came from an index (pip and uv record a ``direct_url.json`` for anything installed
  from a path, a wheel file or a ``git+`` URL: an index has nothing newer to say about those);
- and it believes the index only when the published metadata names the repository this installation's
  metadata names (``Project-URL: Repository``); an installation that names none is never checked.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from importlib import metadata
from typing import Any

__all__ = [
    "Installed",
    "installation_of",
    "installed_distribution",
    "names_repository",
    "normal_repository",
    "quiet_variable",
]

_NO = frozenset({"", "0", "false", "no", "off"})


def quiet_variable(env: Mapping[str, str]) -> str | None:
    """The variable that turns the check off (its name), or None. FLOWER_NO_UPDATE and CI keep their documented
    meaning (any non-empty value); the two shared switches count unless they say no (``DO_NOT_TRACK=0``)."""
    if env.get("FLOWER_NO_UPDATE"):
        return "FLOWER_NO_UPDATE"
    if env.get("CI"):
        return "CI"
    if env.get("DO_NOT_TRACK", "").strip().lower() not in _NO:
        return "DO_NOT_TRACK"
    if env.get("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "").strip().lower() not in _NO:
        return "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"
    return None


@dataclass(frozen=True)
class Installed:
    """How this distribution was installed: ``from_index`` (no ``direct_url.json``), and the repository its
    metadata names ("" when none)."""

    from_index: bool
    repository: str


_REPOSITORY_LABELS = frozenset({"repository", "source", "source code"})


def _repository_of(urls: list[str]) -> str:
    """The ``Repository`` entry of ``Project-URL`` lines (``"Repository, https://…"``), "" when none."""
    for line in urls:
        label, _, url = line.partition(",")
        if label.strip().lower() in _REPOSITORY_LABELS and url.strip():
            return url.strip()
    return ""


def installed_distribution(name: str) -> Installed | None:
    """``name``'s installation, from its metadata; None when it is not installed (run from a bare checkout)."""
    try:
        return installation_of(metadata.distribution(name))
    except metadata.PackageNotFoundError:
        return None


def installation_of(dist: metadata.Distribution) -> Installed:
    urls = dist.metadata.get_all("Project-URL") or []
    return Installed(from_index=dist.read_text("direct_url.json") is None, repository=_repository_of(urls))


def normal_repository(url: str) -> str:
    """A repository URL compared loosely: no scheme, no ``www.``, no trailing ``/`` or ``.git``, lower case."""
    text = url.strip().lower()
    text = text.split("://", 1)[-1].removeprefix("www.").rstrip("/")
    return text.removesuffix(".git")


def names_repository(info: Any, repository: str) -> bool:
    """The index's ``info`` (PyPI's JSON API) names ``repository`` as the project's repository."""
    if not repository or not isinstance(info, Mapping):
        return False
    urls = info.get("project_urls")
    if not isinstance(urls, Mapping):
        return False
    wanted = normal_repository(repository)
    return any(
        str(label).strip().lower() in _REPOSITORY_LABELS and isinstance(url, str) and normal_repository(url) == wanted
        for label, url in urls.items()
    )
