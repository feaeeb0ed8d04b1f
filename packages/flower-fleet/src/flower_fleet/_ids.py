"""A step's session id, derived from the run and the step's label, so every attempt of the step — on any
machine — names the same session and a retry resumes it from the store instead of starting over."""

from __future__ import annotations

import uuid

__all__ = ["FLEET_NAMESPACE", "step_session_id"]

# Fixed forever: changing it would make every running fleet's retries start fresh sessions.
FLEET_NAMESPACE = uuid.UUID("6f1c2a7e-4b1d-5c3a-9e0f-f1ee7f1ee700")


def step_session_id(run_id: str, label: str) -> str:
    """The session id of ``label`` (a step name, or a round/retry label such as ``build#retry1``) in ``run_id``."""
    return str(uuid.uuid5(FLEET_NAMESPACE, f"{run_id}\x1f{label}"))
