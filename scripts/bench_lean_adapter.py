"""Figures for the Lean adapter (no Lean needed): parser throughput and sandbox overhead.

    python scripts/bench_lean_adapter.py [--runs N]

Prints:
* ``parse_lake_output`` on a synthetic Mathlib-scale log (8,800 jobs in the v4.32 format, with a
  warning and a multi-line error every 100 jobs): seconds and lines per second;
* reading a trusted-inspector report of 5,000 declarations (``InspectorReport``: validation and
  SHA-256 of each elaborated type and value): seconds;
* the source lints (the lexer that finds comments as Lean does, then every rule) on a
  10,000-line model-written file: seconds and lines per second;
* the wall-clock cost of running ``/bin/true`` through ``run_process`` without and with the
  bubblewrap sandbox (the plain one, and the project confinement that hides the project and the
  home and protects build outputs; mean over N runs, milliseconds), i.e. what confinement adds to
  each ``lake`` call.
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
from fyan.lean.inspector import InspectorReport  # noqa: E402
from fyan.lean.lints import lint  # noqa: E402
from fyan.sandbox.runner import bwrap_status, project_confinement, run_process  # noqa: E402


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

    decls = [{"name": f"L.U.t{i}", "kind": "theorem" if i % 3 else "def", "module": "L.U.Basic",
              "type_repr": "Lean.Expr.forallE `n (Lean.Expr.const `Int []) " * 40 + str(i),
              "value_repr": ("Lean.Expr.app " * 100) if i % 3 == 0 else None, "axioms": ["propext", "Quot.sound"]}
             for i in range(5000)]
    raw = json.dumps({"format": "fyan-inspector/1", "lean_version": "4.31.0",
                      "modules": [{"name": "L.U.Basic", "declarations": decls,
                                   "extensions": [{"name": "Lean.declRangeExt", "entries": 5000}]}]})
    start = time.perf_counter()
    report = InspectorReport.model_validate_json(raw)
    elapsed = time.perf_counter() - start
    assert len(report.modules[0].declarations) == 5000
    print(f"InspectorReport: 5000 declarations ({len(raw) / 1e6:.1f} MB of JSON) read and hashed in {elapsed:.3f} s")

    block = ("theorem t{i} (n : Int) (h : 0 < n) : n * n > 0 := by\n  -- a comment with #eval in it\n"
             "  have h' : n ≠ 0 := by omega\n  exact Int.mul_pos h h\n\n")
    source = "".join(block.format(i=i) for i in range(2000))
    n_src = source.count("\n")
    start = time.perf_counter()
    findings = lint(source)
    elapsed = time.perf_counter() - start
    assert not [f for f in findings if f.severity == "error"]
    print(f"lint: {n_src} lines in {elapsed:.3f} s ({n_src / elapsed:,.0f} lines/s)")

    with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
        project = Path(tmp) / "project"
        ws = project / ".fyan" / "gate" / "u" / "gate"
        (ws / ".lake" / "build").mkdir(parents=True)
        for i in range(50):
            (ws / ".lake" / "build" / f"M{i}.olean").write_text("x")
        (project / "lean").mkdir()
        confined = project_confinement(project, [ws], read_only=sorted((ws / ".lake" / "build").iterdir()))
        for mode, confinement in (("off", None), ("require", None), ("require+project", confined)):
            if mode.startswith("require") and bwrap_status()[0] is None:
                print(f"sandbox overhead: bubblewrap unusable here ({bwrap_status()[1]})")
                break
            times = []
            for _ in range(args.runs):
                r = run_process(["/bin/true"], cwd=ws, timeout_s=30, sandbox=mode.split("+")[0],
                                confinement=confinement)
                assert r.ok, r.note
                times.append(r.duration_s * 1000)
            print(f"run_process(/bin/true) sandbox={mode}: mean {statistics.mean(times):.1f} ms, "
                  f"median {statistics.median(times):.1f} ms over {args.runs} runs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
