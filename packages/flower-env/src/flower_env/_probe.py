"""The live credential probe: one real, tiny ``POST /v1/messages``, bounded by a wall-clock timeout."""

from __future__ import annotations

import json
import os
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Literal

from ._keys import DEFAULT_BASE_URL

__all__ = ["DEFAULT_PROBE_MODEL", "ProbeResult", "Verdict", "probe_credentials"]

Verdict = Literal["ok", "auth", "config", "net"]

DEFAULT_PROBE_MODEL = "claude-haiku-4-5"
# A 400 that says the model or the route does not exist is a configuration problem, not a bad request.
_CONFIG_PHRASES = ("not_found", "not found", "does not exist", "unknown model", "no such model", "invalid model")


@dataclass(frozen=True)
class ProbeResult:
    """``ok`` (works, or cannot tell), ``auth`` (rejected), ``config`` (wrong gateway or model), ``net``."""

    verdict: Verdict
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.verdict == "ok"


def _request(timeout: float) -> urllib.request.Request:
    base = (os.environ.get("ANTHROPIC_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
    model = os.environ.get("ANTHROPIC_DEFAULT_HAIKU_MODEL") or os.environ.get("ANTHROPIC_MODEL") or DEFAULT_PROBE_MODEL
    # max_tokens=16, not 1: models that always think stall for ~30 s when they cannot fit any thinking.
    body = json.dumps({"model": model, "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]}).encode()
    headers = {"content-type": "application/json", "anthropic-version": "2023-06-01"}
    if os.environ.get("ANTHROPIC_API_KEY"):
        headers["x-api-key"] = os.environ["ANTHROPIC_API_KEY"]
    else:
        headers["authorization"] = f"Bearer {os.environ.get('ANTHROPIC_AUTH_TOKEN', '')}"
    return urllib.request.Request(f"{base}/v1/messages", data=body, headers=headers, method="POST")


def _verdict_for_status(code: int, body: str) -> ProbeResult:
    detail = " ".join(body.split())[:200]
    if 200 <= code < 400:
        return ProbeResult("ok")
    if code in (401, 403):
        return ProbeResult("auth", f"HTTP {code}: credential rejected. {detail}".strip())
    if code == 404 or (code == 400 and any(p in body.lower() for p in _CONFIG_PHRASES)):
        return ProbeResult("config", f"HTTP {code}: wrong gateway address or model name. {detail}".strip())
    if code >= 500:
        return ProbeResult("net", f"HTTP {code}: server error (not your credential)")
    # 429 and other 4xx: the credential was accepted far enough to be rate limited or judged on content.
    return ProbeResult("ok", f"HTTP {code} (cannot tell, letting it pass) {detail[:80]}".strip())


def _probe_once(timeout: float) -> ProbeResult:
    try:
        with urllib.request.urlopen(_request(timeout), timeout=timeout) as response:
            return _verdict_for_status(response.status, "")
    except urllib.error.HTTPError as exc:
        try:
            body = exc.read(200).decode("utf-8", "replace")
        except Exception:  # noqa: BLE001 - the body is only detail
            body = ""
        return _verdict_for_status(exc.code, body)
    except Exception as exc:  # noqa: BLE001 - DNS, TLS, refused, timeout: all "the network"
        reason = getattr(exc, "reason", exc)
        return ProbeResult("net", f"{type(reason).__name__}: {reason}")


def probe_credentials(timeout: float = 20.0) -> ProbeResult:
    """Send one ``max_tokens=16`` request with the configured credential and classify the answer.

    Returns within ``timeout`` seconds of wall time even when a server accepts the connection and never
    answers (the socket timeout alone bounds each read, not the whole exchange).
    """
    if not (os.environ.get("ANTHROPIC_API_KEY") or os.environ.get("ANTHROPIC_AUTH_TOKEN")):
        return ProbeResult("auth", "no credential")
    outcome: list[ProbeResult] = []
    worker = threading.Thread(target=lambda: outcome.append(_probe_once(timeout)), name="flower-probe", daemon=True)
    worker.start()
    worker.join(timeout)
    if not outcome:
        return ProbeResult("net", f"no answer within {timeout:g}s")
    return outcome[0]
