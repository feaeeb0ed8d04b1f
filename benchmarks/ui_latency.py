"""The live page's time from an event to its display: events published at a steady pace, the page open in headless
Chromium (Selenium + chromium-driver), each event's latency = when the page had drawn it − when it was published.

Prints the median, p95 and max in milliseconds for each source (goal: p95 <= 1000 ms):
- ``memory``: a source in this process (the page's own part: the stream, the browser, the drawing);
- ``store``: the events appended to a SQLite run store, which the page's local source follows as
  `flower ui` does (polling the store; the publishing run is another process in real use).

    hatch run python benchmarks/ui_latency.py [--events 200] [--every-ms 50]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))


from e2e._browser import browser, wait_for  # noqa: E402 - the tests' rig, found through the path set above
from ui_helpers import MemorySource, PageServer  # noqa: E402 - as above


def _event(i: int) -> dict[str, Any]:
    return {"kind": "text", "text": f"turn {i}", "payload": {"context": 1000 + 10 * i, "message_id": f"m{i}"}}


def measure(source: Any, publish: Callable[[int], None], run_id: str, events: int, every_s: float) -> list[float]:
    """Latencies (ms) of ``events`` events published by ``publish(i)`` every ``every_s``, as the page drew them."""
    published: dict[int, float] = {}
    with PageServer([source]) as page, browser(Path(tempfile.mkdtemp(prefix="ui-bench-"))) as driver:
        driver.get(f"{page.url}#{source.name}/{run_id}")
        wait_for(lambda: driver.execute_script("return (window.flowerDrawn || []).length"), "the page to draw")
        for i in range(1, events + 1):
            published[i] = time.time() * 1000
            publish(i)
            time.sleep(every_s)
        wait_for(
            lambda: (
                driver.execute_script("const d = window.flowerDrawn || []; return d.length && d[d.length-1][0]")
                >= events
            ),
            "the last event on the page",
        )
        drawn: list[list[float]] = driver.execute_script("return window.flowerDrawn")
    latencies = []
    for seq, at in published.items():
        shown = next(when for drawn_seq, when in drawn if drawn_seq >= seq)
        latencies.append(shown - at)
    return latencies


def _memory(events: int, every_s: float) -> list[float]:
    source = MemorySource()
    source.runs.append({"id": "bench", "state": "running"})
    source.log["bench"] = []
    return measure(source, lambda i: source.publish("bench", _event(i)), "bench", events, every_s)


def _store(events: int, every_s: float) -> list[float] | None:
    try:
        from ui_helpers import store_source  # the local source over a SQLite store (needs flower_cli.control)
    except ImportError as exc:
        print(f"store: skipped ({exc})")
        return None
    source, publish = store_source(Path(tempfile.mkdtemp(prefix="ui-bench-store-")), "bench")
    return measure(source, lambda i: publish(_event(i)), "bench", events, every_s)


def _report(name: str, latencies: list[float]) -> None:
    ordered = sorted(latencies)
    p95 = ordered[max(0, int(round(0.95 * len(ordered))) - 1)]
    verdict = "ok" if p95 <= 1000 else "OVER the 1 s goal"
    print(
        f"{name:>6}: {len(ordered)} events  median {statistics.median(ordered):6.0f} ms  "
        f"p95 {p95:6.0f} ms  max {ordered[-1]:6.0f} ms  ({verdict})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200)
    parser.add_argument("--every-ms", type=float, default=50.0)
    args = parser.parse_args()
    every_s = args.every_ms / 1000
    print(f"event -> display on the live page, {args.events} events every {args.every_ms:.0f} ms")
    _report("memory", _memory(args.events, every_s))
    stored = _store(args.events, every_s)
    if stored is not None:
        _report("store", stored)


if __name__ == "__main__":
    main()
