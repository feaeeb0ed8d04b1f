"""``flower doctor``: every setting and where it came from, the endpoint, the credential, the store.

``--json`` prints the same findings as one document on stdout (``{"kind": "doctor", ...}``) and nothing on
stderr but the closing error line when something is wrong.
"""

from __future__ import annotations

import errno
import io
import json
import os
import shlex
import stat
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import flower_env
import flower_resilience

from ..._shared.exits import Exit, ExitCode
from ...runtime import HandoffPolicy, describe_os_error, resolve_window
from ...view import Renderer
from .doctor_limits import show_usage_limit
from .output import human_view, write_stdout
from .store import check_store

if TYPE_CHECKING:
    from .._global_options import GlobalOptions

__all__ = ["run_doctor"]


def run_doctor(opts: GlobalOptions, *, probe: bool = True) -> None:

    # With --json the findings go into the document; the human lines are written nowhere.
    view: Renderer = Renderer(io.StringIO(), color=False) if opts.json else human_view(opts)
    problems: list[tuple[ExitCode, str]] = []
    report: dict[str, Any] = {"kind": "doctor"}
    flower_env.load_dotenv()

    missing = _show_settings(view, report, problems)
    up = _show_endpoint(view, report, problems)
    report["credential"] = _show_credential(view, problems, missing=missing, probe=probe, up=up)

    report["usage_limit"] = show_usage_limit(view, opts.limit_wait)

    view.line("context window", "bold")
    report["window"] = _show_window(view, problems)

    view.line("store", "bold")

    report["store"] = {}
    store_problem = check_store(opts, view, report["store"])
    if store_problem:
        problems.append(store_problem)

    report["run_dir"] = _show_run_dir(view, opts.run_dir, problems)

    report["ok"] = not problems
    report["problems"] = [{"exit": int(code), "message": text} for code, text in problems]
    if opts.json:
        write_stdout(json.dumps(report, ensure_ascii=False) + "\n")
    if problems:
        worst = next(
            c for c in (ExitCode.CONFIG, ExitCode.OFFLINE, ExitCode.NOT_DONE) if any(p[0] == c for p in problems)
        )
        raise Exit(worst, "doctor found problems: " + "; ".join(p[1] for p in problems))
    view.line("all good", "green")


def _show_settings(view: Renderer, report: dict[str, Any], problems: list[tuple[ExitCode, str]]) -> str | None:
    """Every setting and its source (secrets masked), the .env notes; what is missing for a credential, if so."""
    view.line("settings", "bold")
    report["settings"] = [
        {"key": s.key, "value": s.display, "source": s.source} for s in flower_env.settings()
    ]  # secrets masked
    for setting in flower_env.settings():
        view.line(f"  {setting.key} = {setting.display}  ({setting.source})")
    report["notes"] = flower_env.load_notes()
    for note in report["notes"]:
        view.line(f"  x {note}", "red")
    if report["notes"]:
        # Each note is a .env line or file flower skipped: a setting the user wrote that does not apply.
        first = report["notes"][0]
        more = f" (and {len(report['notes']) - 1} more above)" if len(report["notes"]) > 1 else ""
        problems.append((ExitCode.CONFIG, f"{first}{more}: fix the .env so every line is KEY=VALUE"))
    missing = flower_env.check_credentials()
    report["credential_missing"] = missing
    if missing:
        problems.append((ExitCode.CONFIG, "no usable credential: run `flower setup`"))
        view.line("  x " + missing.splitlines()[0], "red")
    return missing


def _show_endpoint(view: Renderer, report: dict[str, Any], problems: list[tuple[ExitCode, str]]) -> bool:
    """Whether the endpoint answers (DNS + TCP, no request sent)."""
    view.line("endpoint", "bold")
    host, port = flower_resilience.endpoint()
    why = flower_resilience.unreachable_reason(host, port, 5.0)
    up = why is None
    report["endpoint"] = {"host": host, "port": port, "reachable": up, "error": why}
    if up:
        view.line(f"  + {host}:{port} reachable (DNS + TCP, no request sent)", "green")
    else:
        problems.append((ExitCode.OFFLINE, f"{host}:{port} is not reachable ({why})"))
        view.line(f"  x {host}:{port} not reachable ({why}): check the network or ANTHROPIC_BASE_URL", "red")
    return up


def _show_credential(
    view: Renderer, problems: list[tuple[ExitCode, str]], *, missing: str | None, probe: bool, up: bool
) -> dict[str, Any]:
    """The live probe (one tiny paid request), unless there is nothing to probe, no way there, or no wish to."""
    view.line("credential", "bold")
    credential: dict[str, Any] = {"probed": False}
    if missing:
        credential["skipped"] = "no credential"
        view.line("  - skipped: no credential", "dim")
    elif not probe or os.environ.get("FLOWER_NO_PROBE"):
        credential["skipped"] = "--no-probe / FLOWER_NO_PROBE"
        view.line("  - live probe skipped (--no-probe / FLOWER_NO_PROBE)", "dim")
    elif not up:
        credential["skipped"] = "endpoint unreachable"
        view.line("  - skipped: endpoint unreachable", "dim")
    else:
        verdict = flower_env.probe_credentials()
        credential.update(probed=True, verdict=verdict.verdict, detail=verdict.detail)
        if verdict.verdict == "ok":
            flower_env.remember_probe()
            view.line("  + accepted" + (f" ({verdict.detail})" if verdict.detail else ""), "green")
        else:
            code = ExitCode.OFFLINE if verdict.verdict == "net" else ExitCode.CONFIG
            problems.append((code, f"credential check: {verdict.verdict}"))
            view.line(f"  x {verdict.verdict}: {verdict.detail}", "red")
    return credential


def _show_run_dir(view: Renderer, run_dir: Path, problems: list[tuple[ExitCode, str]]) -> dict[str, Any]:
    """Whether a run can write the run dir (a problem when not: the next run would exit 3 on it), and its
    permissions: a warning (not a problem: nothing fails) when others may read it.

    flower creates it 0700, because its transcripts hold every tool output the agent saw; one made by an
    older flower (or by hand) is never chmod-ed behind the user's back, only reported with the command.
    """
    view.line("run dir", "bold")
    found: dict[str, Any] = {"path": str(run_dir)}
    unwritable = _write_problem(run_dir)
    found["writable"] = unwritable is None
    if unwritable is not None:
        found["error"] = unwritable
        problems.append((ExitCode.CONFIG, unwritable))
        view.line(f"  x {unwritable}", "red")
        return found
    try:
        mode = stat.S_IMODE(run_dir.stat().st_mode)
    except OSError:
        found["exists"] = False
        view.line(f"  - {run_dir} does not exist yet (the first run creates it, mode 0700)", "dim")
        return found
    found.update(exists=True, mode=f"{mode:04o}", private=not mode & 0o077)
    if mode & 0o077:
        fix = f"chmod 700 {shlex.quote(str(run_dir))}"
        found["fix"] = fix
        view.line(
            f"  ! {run_dir} is mode {mode:04o}: others on this machine can read its transcripts; run `{fix}`",
            "yellow",
        )
    else:
        view.line(f"  + {run_dir} is private (mode {mode:04o})", "green")
    return found


def _write_problem(run_dir: Path) -> str | None:
    """Why a run could not write its files under ``run_dir`` (None: it can), found by writing: a temporary
    file in the run dir, or in the nearest folder above it that exists (the run creates the rest). Asking
    `os.access` instead would pass a read-only mount, and anything at all for root; nothing is left behind."""
    target = run_dir
    while not os.path.lexists(target) and target != target.parent:
        target = target.parent
    try:
        if not target.is_dir():
            raise OSError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(run_dir))
        with tempfile.TemporaryFile(dir=target, prefix=".flower-doctor-"):
            pass
    except OSError as exc:
        named = exc if exc.filename else OSError(exc.errno, exc.strerror, str(target))
        return describe_os_error(named, "the run dir", elsewhere="point -r elsewhere")
    return None


def _show_window(view: Renderer, problems: list[tuple[ExitCode, str]]) -> dict[str, Any]:
    """The window handoffs are planned against, where it came from, and when a session hands off."""

    window = resolve_window(base_url=os.environ.get("ANTHROPIC_BASE_URL"))
    policy = HandoffPolicy(window=window.tokens)
    view.line(
        f"  {window.tokens:,} tokens ({window.source}); a session hands off at {policy.at:,}, warned from {policy.warn_at:,}"
    )
    if window.note:
        view.line(f"  ! {window.note}", "yellow")
    return {
        "tokens": window.tokens,
        "source": window.source,
        "handoff_at": policy.at,
        "warn_at": policy.warn_at,
        "note": window.note or None,
    }
