"""What confinement costs per process: wall-clock seconds of ``run_process(["true"])`` unconfined
through the reaper (``sandbox = "off"``), confined by bubblewrap (``require``), and a bare
``subprocess.run`` for comparison. Prints the median and the maximum of N runs (default 20):

    python scripts/bench_sandbox.py [N]
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fyan.sandbox.runner import bwrap_status, run_process, tree_mechanism  # noqa: E402


def timed(fn, n: int) -> list[float]:
    out = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def main(n: int) -> None:
    cwd = Path(tempfile.mkdtemp(prefix="fyan-bench-"))
    rows = [("bare subprocess.run(['true'])", timed(lambda: subprocess.run(["true"]), n)),
            (f"off: reaper ({tree_mechanism()})",
             timed(lambda: run_process(["true"], cwd=cwd, timeout_s=30, sandbox="off"), n))]
    if bwrap_status()[0] is not None:
        rows.append(("require: bubblewrap", timed(lambda: run_process(["true"], cwd=cwd, timeout_s=30,
                                                                      sandbox="require"), n)))
    for name, times in rows:
        print(f"{name:45s} median {statistics.median(times) * 1000:7.1f} ms   max {max(times) * 1000:7.1f} ms")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
