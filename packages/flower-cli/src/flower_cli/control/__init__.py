"""Talk to a run from anywhere: the run's side publishes (`RunPublisher`), any process reads and tells (`Control`).

A running run writes every event it prints (``--json``'s) into its store's run log, with a summary of where it
is (its head), and takes the messages sent to it within a second. `Control` lists a store's runs (`RunInfo`:
running / waiting on a question / done / stopped / dead), follows a run's events, and answers, mails or stops it
— what ``flower status / watch / answer / mail / stop`` do, for any program. `ControlError` is a request that
cannot be done, in one line that says what to do. `FleetRuns`: a fleet's runs (``FLOWER_TEMPORAL``), answered and
stopped through the fleet's signals.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._shared.lazy import lazy_surface

if TYPE_CHECKING:
    from ._control import Control as Control
    from ._control import ControlError as ControlError
    from ._control import default_sender as default_sender
    from ._fleet import FleetRuns as FleetRuns
    from ._fleet import fleet_configured as fleet_configured
    from ._head import HeadFold as HeadFold
    from ._info import HEARTBEAT_S as HEARTBEAT_S
    from ._info import STALE_S as STALE_S
    from ._info import RunInfo as RunInfo
    from ._publisher import MessageHandler as MessageHandler
    from ._publisher import PublishingSink as PublishingSink
    from ._publisher import RunPublisher as RunPublisher

__all__ = lazy_surface(__name__)
