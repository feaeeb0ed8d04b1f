"""Store upkeep: delete and prune sessions without touching one a process drives or a wake needs, compact the
store and measure it.

`StoreUpkeep` plans (``plan_delete``, ``plan_prune``) and applies (``apply``) deletions, compacts (``compact``)
and measures (``size``); `UpkeepPlan`, `UpkeepResult`, `Kept`, `UpkeepSession` and `StoreSize` are its values.
The SQL of each backend is in ``_sqlite_ops`` and ``_postgres_ops``.
"""

from ._model import Kept, StoreSize, UpkeepPlan, UpkeepResult, UpkeepSession
from ._upkeep import StoreUpkeep

__all__ = ["Kept", "StoreSize", "StoreUpkeep", "UpkeepPlan", "UpkeepResult", "UpkeepSession"]
