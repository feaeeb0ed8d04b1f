"""What a load-time rewrite returns: `LoadReport` (what one load changed, and its one-line summary, `trim_report`)
and `Rewritten` (the rewritten entries with their report). The layers keep the latest in ``last_report``, and a
fenced view passes its backend's on."""

from ._load_report import LoadReport, trim_report
from ._rewritten import Rewritten

__all__ = ["LoadReport", "Rewritten", "trim_report"]
