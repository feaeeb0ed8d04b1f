"""Temporal's connection and call errors as one line a person can act on.

The Rust client reports a refused connection as ``Failed client connect: Server connection error:
tonic::transport::Error(Transport, ConnectError(ConnectError("tcp connect error", …)))``: the cause is in
there, wrapped in the library's debug output. This module names the cause (refused, no such host, timed out,
TLS) and what to do, and says which failures of a call are the server's (unreachable now) rather than the
run's.
"""

from __future__ import annotations

from temporalio.service import RPCError, RPCStatusCode

__all__ = ["SERVER_TROUBLE", "call_failure", "is_not_found", "unreachable"]

# What the client's error text says (lowercased) -> the cause in words; the first that matches wins.
_CAUSES: tuple[tuple[tuple[str, ...], str], ...] = (
    (("connection refused", "connectionrefused"), "connection refused: is the server running there?"),
    (("dns error", "name or service not known", "failed to lookup address"), "no such host"),
    (("timed out", "timeout", "deadline"), "timed out"),
    (("certificate", "tls", "ssl", "handshake"), "the TLS handshake failed: check the FLOWER_TEMPORAL_TLS_* files"),
    (("connection reset", "broken pipe", "unexpected eof"), "the connection was dropped: is it a Temporal server?"),
    (("unauthenticated", "permission denied"), "the server refused this client: check the TLS client certificate"),
    (("h2 protocol error", "http2", "frame with invalid size"), "it does not speak gRPC: is it a Temporal server?"),
)

# The call's status codes that mean the server (or the way to it), not the run: exit 3, like no server at all.
SERVER_TROUBLE = frozenset(
    {
        RPCStatusCode.UNAVAILABLE,
        RPCStatusCode.DEADLINE_EXCEEDED,
        RPCStatusCode.UNAUTHENTICATED,
        RPCStatusCode.PERMISSION_DENIED,
        RPCStatusCode.UNIMPLEMENTED,
    }
)


def _cause(text: str) -> str:
    low = text.lower()
    for needles, said in _CAUSES:
        if any(n in low for n in needles):
            return said
    return "the connection failed"


def unreachable(address: str, namespace: str, error: BaseException) -> str:
    """The line for a client that could not connect to ``address``."""
    return (
        f"cannot reach the Temporal server at {address} (namespace {namespace}): {_cause(str(error))}; "
        "start it (`temporal server start-dev`) or set FLOWER_TEMPORAL=host:port"
    )


def is_not_found(error: RPCError) -> bool:
    """The run (the workflow execution) does not exist or has ended — not a namespace that does not."""
    return error.status == RPCStatusCode.NOT_FOUND and "namespace" not in error.message.lower()


def call_failure(address: str, error: RPCError) -> str:
    """The line for a call the server did not complete; with `SERVER_TROUBLE` its cause in words, else the
    server's own message (its first line)."""
    said = (error.message or "").strip().splitlines()
    first = said[0] if said else error.status.name.lower()
    if error.status in SERVER_TROUBLE:
        return f"the Temporal server at {address} did not answer: {_cause(first)}; set FLOWER_TEMPORAL=host:port"
    return f"the Temporal server at {address} refused the call: {first}"
