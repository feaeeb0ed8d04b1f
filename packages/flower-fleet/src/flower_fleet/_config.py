"""Where the fleet's Temporal server is and how to reach it, from the environment (or given in code)."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from temporalio.client import Client
from temporalio.runtime import Runtime
from temporalio.service import TLSConfig

from ._transport import unreachable

__all__ = ["DEFAULT_ROOT", "DEFAULT_TASK_QUEUE", "FleetConfig", "FleetConfigError"]

DEFAULT_TASK_QUEUE = "flower-fleet"
DEFAULT_ROOT = "~/flower-fleet"


class FleetConfigError(ValueError):
    """A setting that cannot work; the message says which and what to set."""


@dataclass(frozen=True)
class FleetConfig:
    """``address`` is the server's host:port (``FLOWER_TEMPORAL``), ``namespace`` its namespace
    (``FLOWER_TEMPORAL_NAMESPACE``), ``task_queue`` the queue the workers poll (``FLOWER_FLEET_TASK_QUEUE``).
    TLS: ``tls_ca`` (a PEM file; setting any TLS option turns TLS on), ``tls_cert`` + ``tls_key`` for mutual
    TLS, ``tls_server_name`` to override the name checked. ``root`` is the fleet root (``FLOWER_FLEET_ROOT``):
    each run's workspace is ``<root>/runs/<run id>``, the same path on every machine."""

    address: str = "127.0.0.1:7233"
    namespace: str = "default"
    task_queue: str = DEFAULT_TASK_QUEUE
    tls_ca: Path | None = None
    tls_cert: Path | None = None
    tls_key: Path | None = None
    tls_server_name: str | None = None
    root: Path = Path(DEFAULT_ROOT)

    @classmethod
    def from_env(cls, **overrides: Any) -> FleetConfig:
        """The environment's settings; a keyword that is not None wins over its variable."""
        env = os.environ

        def path(name: str) -> Path | None:
            value = env.get(name, "").strip()
            return Path(value).expanduser() if value else None

        config = cls(
            address=env.get("FLOWER_TEMPORAL", "").strip() or cls.address,
            namespace=env.get("FLOWER_TEMPORAL_NAMESPACE", "").strip() or cls.namespace,
            task_queue=env.get("FLOWER_FLEET_TASK_QUEUE", "").strip() or cls.task_queue,
            tls_ca=path("FLOWER_TEMPORAL_TLS_CA"),
            tls_cert=path("FLOWER_TEMPORAL_TLS_CERT"),
            tls_key=path("FLOWER_TEMPORAL_TLS_KEY"),
            tls_server_name=env.get("FLOWER_TEMPORAL_TLS_SERVER_NAME", "").strip() or None,
            root=path("FLOWER_FLEET_ROOT") or Path(DEFAULT_ROOT).expanduser(),
        )
        given = {k: v for k, v in overrides.items() if v is not None}
        if "root" in given:
            given["root"] = Path(given["root"]).expanduser()
        return replace(config, **given)

    def check(self) -> None:
        """Raise `FleetConfigError` for a setting that cannot work."""
        host, sep, port = self.address.rpartition(":")
        if not sep or not host or not port.isdigit():
            raise FleetConfigError(f"FLOWER_TEMPORAL={self.address!r}: give the Temporal server as host:port")
        if (self.tls_cert is None) != (self.tls_key is None):
            raise FleetConfigError("mutual TLS needs both FLOWER_TEMPORAL_TLS_CERT and FLOWER_TEMPORAL_TLS_KEY")
        for name, file in (("CA", self.tls_ca), ("CERT", self.tls_cert), ("KEY", self.tls_key)):
            if file is not None and not file.is_file():
                raise FleetConfigError(f"FLOWER_TEMPORAL_TLS_{name}={file}: no such file")

    @property
    def tls(self) -> bool:
        return any(x is not None for x in (self.tls_ca, self.tls_cert, self.tls_server_name))

    async def client(self, runtime: Runtime | None = None) -> Client:
        """A client of the server, on ``runtime`` (None: the SDK's default; a command passes its own, see
        `_lifetime`); raises `FleetConfigError` when it cannot be reached, saying where it looked and why."""
        self.check()
        tls: TLSConfig | bool = False
        if self.tls:
            tls = TLSConfig(
                server_root_ca_cert=self.tls_ca.read_bytes() if self.tls_ca else None,
                client_cert=self.tls_cert.read_bytes() if self.tls_cert else None,
                client_private_key=self.tls_key.read_bytes() if self.tls_key else None,
                domain=self.tls_server_name,
            )
        try:
            return await Client.connect(self.address, namespace=self.namespace, tls=tls, runtime=runtime)
        except RuntimeError as exc:
            raise FleetConfigError(unreachable(self.address, self.namespace, exc)) from exc
