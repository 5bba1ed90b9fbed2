"""Figures for the Lean adapter (no Lean needed): parser throughput and sandbox overhead.

    python scripts/bench_lean_adapter.py [--runs N]

Prints:
* ``parse_lake_output`` on a synthetic Mathlib-scale log (8,800 jobs in the v4.32 format, with a
  warning and a multi-line error every 100 jobs): seconds and lines per second;
* ``parse_probe_output`` on 1,000 nonce-tagged records: seconds;
* the wall-clock cost of running ``/bin/true`` through ``run_process`` without and with the
  bubblewrap sandbox (mean over N runs, milliseconds), i.e. what the sandbox adds to each
  ``lake`` call.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fyan.lean.diagnostics import parse_lake_output  # noqa: E402
from fyan.lean.probe import parse_probe_output  # noqa: E402
from fyan.lean.runner import bwrap_status, run_process  # noqa: E402


def synthetic_log(jobs: int) -> str:
    lines = []
    for i in range(1, jobs + 1):
        mod = f"Mathlib.Area{i % 37}.File{i}"
        if i % 100 == 0:
            lines.append(f"⚠ [{i}/{jobs}] Built {mod} (2.1s)")
            lines.append(f"warning: Mathlib/Area{i % 37}/File{i}.lean:12:4: declaration uses `sorry`")
            lines.append(f"error: Mathlib/Area{i % 37}/File{i}.lean:40:2: unsolved goals")
            lines += ["x : ℕ", "h : 0 < x", "⊢ x ≠ 0", ""]
        else:
            lines.append(f"✔ [{i}/{jobs}] Built {mod} ({i % 9}.{i % 10}s)")
    lines.append(f"Build completed successfully ({jobs} jobs).")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()

    text = synthetic_log(8800)
    n_lines = text.count("\n") + 1
    start = time.perf_counter()
    log = parse_lake_output(text)
    elapsed = time.perf_counter() - start
    assert len(log.jobs) == 8800 and log.succeeded
    print(f"parse_lake_output: {n_lines} lines, {len(log.jobs)} jobs, {len(log.diagnostics)} diagnostics "
          f"in {elapsed:.3f} s ({n_lines / elapsed:,.0f} lines/s)")

    nonce = "FYAN-PROBE-" + "a" * 32
    out = []
    roots = []
    for i in range(1000):
        rec = {"name": f"L.U.t{i}", "found": True, "kind": "theorem", "type_repr": "x" * 2000,
               "local_constants": [{"name": "L.D.f", "meaning": ["T" * 500, "V" * 500]}], "axioms": ["propext"]}
        roots.append(rec["name"])
        out.append(json.dumps({"severity": "information", "pos": {"line": 100 + i, "column": 0}, "fileName": "<stdin>",
                               "data": f"{nonce} {json.dumps(rec)}"}))
    lines = {r: 100 + i for i, r in enumerate(roots)}
    start = time.perf_counter()
    result = parse_probe_output("\n".join(out), nonce, roots, lines)
    elapsed = time.perf_counter() - start
    assert result.ok and len(result.records) == 1000
    print(f"parse_probe_output: 1000 records ({len(''.join(out)) / 1e6:.1f} MB) in {elapsed:.3f} s")

    with tempfile.TemporaryDirectory() as tmp:
        for mode in ("off", "require"):
            if mode == "require" and bwrap_status()[0] is None:
                print(f"sandbox overhead: bubblewrap unusable here ({bwrap_status()[1]})")
                break
            times = []
            for _ in range(args.runs):
                r = run_process(["/bin/true"], cwd=Path(tmp), timeout_s=30, sandbox=mode)
                assert r.ok, r.note
                times.append(r.duration_s * 1000)
            print(f"run_process(/bin/true) sandbox={mode}: mean {statistics.mean(times):.1f} ms, "
                  f"median {statistics.median(times):.1f} ms over {args.runs} runs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
