"""flower-workbench: a shared on-disk workbench for agents, and the spill guard that keeps big outputs on disk.

from flower_workbench import Workbench, index_guard, spill_guard

wb = Workbench(workspace)
hooks = {"PostToolUse": [spill_guard(wb), index_guard(wb)]}
"""

from ._describe import describe_file
from ._spill import spill_pointers
from ._spill_reads import reads_spill
from .guards import BULKY_TOOLS, DEFAULT_SPILL_THRESHOLD, INDEXED_TOOLS, index_guard, spill_guard
from .workbench import Workbench

__version__ = "0.1.0"

__all__ = [
    "BULKY_TOOLS",
    "DEFAULT_SPILL_THRESHOLD",
    "INDEXED_TOOLS",
    "Workbench",
    "__version__",
    "describe_file",
    "index_guard",
    "reads_spill",
    "spill_guard",
    "spill_pointers",
]
