"""The cost of one prover-tool round on a warm language server of the real core Lean 4.35.0
(``tests/lean_core.py``; prelude files only): ``lean_check`` of a three-theorem text with a
``sorry`` and an error (diagnostics plus goals), ``lean_goals``, a two-script ``lean_try`` and
``lean_lookup``, each ``--rounds`` times after one warm-up; prints p50/p95 per tool, ms.
Target: a round under 100 ms on the warm server.

    .venv/bin/python scripts/bench_tool_round.py [--rounds 30]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fyan.lean.lsp import LeanServer  # noqa: E402
from fyan.prover.models import CheckInput, GoalsInput, LookupInput, TryInput  # noqa: E402
from fyan.prover.tools import ProverTools, fixed_server  # noqa: E402
from tests.lean_core import core_lean  # noqa: E402
from tests.test_prover_tools import HEADER, build_library  # noqa: E402

TEXT = ("theorem open1 (p q : Prop) (h : p) : q := sorry\n"
        "theorem bad1 (p q : Prop) (h : p) : q := h\n"
        "theorem t (p q : Prop) (hp : p) (hq : q) : p := sorry\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=30)
    args = ap.parse_args()
    lean = core_lean()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        out = build_library(lean, root)
        server = LeanServer([str(lean), "--server", "-Dserver.reportDelayMs=0"], cwd=root, uri=(root / "W.lean").as_uri(),
                            env={**os.environ, "LEAN_PATH": str(out), "LAKE": str(root / "no-lake")})
        t0 = time.perf_counter()
        server.start(60)
        tools = ProverTools(HEADER, fixed_server(server), log=root / "tools.jsonl")
        tools.lean_check(CheckInput(text=TEXT))
        print(f"server start and first (cold) check: {(time.perf_counter() - t0) * 1000:.0f} ms")
        calls = {
            "lean_check": lambda i: tools.lean_check(CheckInput(text=TEXT + f"-- round {i}\n")),
            "lean_goals": lambda i: tools.lean_goals(GoalsInput(text=TEXT + f"-- round {i}\n", line=3, column=48)),
            "lean_try (2 scripts)": lambda i: tools.lean_try(TryInput(text=TEXT + f"-- {i}\n", line=3, scripts=["hq", "hp"])),
            "lean_lookup": lambda i: tools.lean_lookup(LookupInput(name="Lib.keep")),
        }
        for name, call in calls.items():
            times = []
            for i in range(args.rounds):
                s = time.perf_counter()
                r = call(i)
                times.append((time.perf_counter() - s) * 1000)
                assert r.status == "ok", r
            times.sort()
            print(f"{name}: p50 {statistics.median(times):.1f} ms, p95 {times[int(0.95 * (len(times) - 1))]:.1f} ms "
                  f"over {args.rounds} rounds")
        server.close()
    print(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
