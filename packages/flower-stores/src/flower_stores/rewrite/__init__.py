"""The load-time rewrite: what a resumed session is sent instead of its stored transcript.

The steps, each a pure function and the readable definition of what it does: `expire` (stale glances,
`_expire`), `trim` (old large results to spill files, `_trim`), `prune` (API errors, old denials, interrupted
calls, `_prune`), and keeping the ``parentUuid`` chain valid after them (`relink`, `heal_orphans`, `_links`),
each set by its policy (`_policies`), and `fit` (a size budget: the oldest outputs, then inputs, spilled until the
transcript fits, `_fit`). `rewrite` (`_pipeline`) runs them in their fixed order — in one scan,
`rewrite_once` (`_fused`), which a property test holds equal to the steps run one after another.
"""

from ._expire import expire
from ._fit import fit, history_chars
from ._fused import rewrite_once
from ._links import heal_orphans, relink
from ._pipeline import rewrite, rewrite_report
from ._policies import EphemeralPolicy, PrunePolicy, TrimPolicy
from ._prune import is_api_error, is_interrupted, prune
from ._trim import spill_path, trim

__all__ = [
    "EphemeralPolicy",
    "PrunePolicy",
    "TrimPolicy",
    "expire",
    "fit",
    "heal_orphans",
    "history_chars",
    "is_api_error",
    "is_interrupted",
    "prune",
    "relink",
    "rewrite",
    "rewrite_once",
    "rewrite_report",
    "spill_path",
    "trim",
]
