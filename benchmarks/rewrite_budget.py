"""The bounded rewrite's cost against today's: `rewrite` with a size budget (what every load of a step runs,
``TrimPolicy(budget=…)``: `fit` after the other steps) against the same rewrite without one.

    hatch run python benchmarks/rewrite_budget.py [--rounds 7] [--budget 390000]

"today": the default resume before budgets (trimming off: expiry and pruning only); "bounded": the default
resume now (long sessions masked, ``TrimPolicy.mask_over``) fitted to the budget. Transcripts: the largest real ones (tests/stores/corpus, each source's lines as one transcript, and the whole
corpus as one — none holds 100k characters of messages), then long sessions shaped like real ones
(``benchmarks/stores.py``'s generator, 1,000 to 10,000 entries, up to 8.7 M characters). The budget defaults to
what a 200k window gives (``HandoffPolicy(window=200_000).load_budget``). Spill files are written before
timing, as a resumed session finds them; each time is the median of ``--rounds`` interleaved rounds.
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from flower_stores import EphemeralPolicy, PrunePolicy, TrimPolicy, history_chars, rewrite

sys.path.insert(0, str(Path(__file__).parent))
from stores import synthetic_session

OLD_DEFAULT = TrimPolicy(enabled=False, keep_recent=20, min_chars=2000, mask_over=None)
CORPUS = Path(__file__).resolve().parents[1] / "tests" / "stores" / "corpus"


def _corpus() -> dict[str, list[Any]]:
    files = sorted(CORPUS.rglob("*.jsonl"))
    read = {p: [json.loads(line) for line in p.read_text(encoding="utf-8").splitlines() if line.strip()] for p in files}
    out = {
        f"corpus {s}/*": [e for p in files if p.relative_to(CORPUS).parts[0] == s for e in read[p]]
        for s in sorted({p.relative_to(CORPUS).parts[0] for p in files})
    }
    out["corpus *"] = [e for p in files for e in read[p]]
    return out


def _timed(fn: Any, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--budget", type=int, default=390_000)
    args = parser.parse_args()
    sessions = {**_corpus(), **{f"generated {n}": synthetic_session(n) for n in (1_000, 3_000, 10_000)}}
    print(
        f"{'transcript':<28}{'chars':>11}{'today ms':>10}{'bounded ms':>12}{'ratio':>7}{'sent today':>12}{'bounded':>10}"
    )
    with tempfile.TemporaryDirectory() as ws:
        for name, entries in sessions.items():
            common: dict[str, Any] = {"ephemeral": EphemeralPolicy(), "prune_policy": PrunePolicy()}
            # Today's default resume (trimming off, nothing masked), and the new one: masked, then fitted.
            today = functools.partial(rewrite, entries, ws, trim_policy=OLD_DEFAULT, **common)
            bounded = functools.partial(
                rewrite, entries, ws, trim_policy=TrimPolicy(enabled=False, budget=args.budget), **common
            )
            sent = history_chars(today().entries)
            fitted = history_chars(bounded().entries)  # (the spill files are written here, before timing)
            a = _timed(today, args.rounds)
            b = _timed(bounded, args.rounds)
            print(
                f"{name:<28}{history_chars(entries):>11,}{a * 1000:>10.1f}{b * 1000:>12.1f}{b / a:>7.2f}"
                f"{sent:>12,}{fitted:>10,}"
            )


if __name__ == "__main__":
    main()
