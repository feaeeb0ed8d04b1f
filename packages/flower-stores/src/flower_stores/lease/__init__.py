"""The session lease: one driver per session, and the fence that keeps a superseded driver from writing.

`_model` holds its values (`LeaseOwner`, `Lease`, the stored `LeaseRow`, `LeaseHeld` / `LeaseLost`), `_rules` the
decisions every backend applies, `_protocol` the five methods (`SessionLeases`, declared once), and
`_backend_methods` those methods on the three primitives a backend supplies (`LeaseMethods`). `_fenced` is the
view the SDK writes through while a lease is held (`FencedSessionStore`) and what wrappers pass on
(`LeasesThrough`); `_takeover` takes a dead local holder's lease over (`take_lease`), and `_hold` keeps one
renewed while work runs (`hold_lease`).
"""

from ._backend_methods import LeaseMethods
from ._fenced import FencedSessionStore, LeasesThrough
from ._hold import hold_lease
from ._model import DEFAULT_LEASE_TTL, Lease, LeaseError, LeaseHeld, LeaseLost, LeaseOwner, LeaseRow
from ._protocol import SessionLeases
from ._rules import Decision, fence_error
from ._takeover import is_abandoned, take_lease

__all__ = [
    "DEFAULT_LEASE_TTL",
    "Decision",
    "FencedSessionStore",
    "Lease",
    "LeaseError",
    "LeaseHeld",
    "LeaseLost",
    "LeaseMethods",
    "LeaseOwner",
    "LeaseRow",
    "LeasesThrough",
    "SessionLeases",
    "fence_error",
    "hold_lease",
    "is_abandoned",
    "take_lease",
]
