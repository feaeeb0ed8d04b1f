"""How long `flower --help` takes, against a bare interpreter start and an SDK import, in one run.

Run: hatch run python benchmarks/cli_startup.py
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time


def best_of(cmd: list[str], runs: int = 7) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    bare = best_of([sys.executable, "-c", "pass"])
    sdk = best_of([sys.executable, "-c", "import claude_agent_sdk"])
    helped = best_of([sys.executable, "-m", "flower_cli", "--help"])
    print(f"python -c pass            {bare * 1000:7.1f} ms")
    print(f"import claude_agent_sdk   {sdk * 1000:7.1f} ms")
    print(f"flower --help             {helped * 1000:7.1f} ms")
    print(f"flower --help / bare start      = {helped / bare:5.2f}x")
    print(f"flower --help / SDK import      = {helped / sdk:5.2f}x  (below 1: the SDK is not imported)")
    print(f"flower --help under a second    = {'yes' if helped < 1.0 else 'NO'}")


if __name__ == "__main__":
    main()
