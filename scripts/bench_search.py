"""Benchmark ``search_declarations`` (``fyan.prover.search``) at Mathlib scale.

The declaration set is GENERATED (not recorded): ``--count`` (default 250,000) declarations
with Mathlib-like names (namespaces such as ``Finset``, ``MeasureTheory``; lemma names built
from the stems Mathlib uses: ``add_comm``, ``integral_mono``, ...), signatures with binders
and operators, and a docstring on about a third. Fixed seed: the same set every run.

Prints: the index build time, search latency p50/p95 (wall time, and the CPU time of the
searching thread, which a loaded machine does not inflate) over ``--queries`` queries (half words,
half type patterns), and the peak resident memory (``ru_maxrss``) of building and of querying,
each measured in its own child process. Targets: p95 < 50 ms, each peak ≤ 1 GiB.

    .venv/bin/python scripts/bench_search.py [--count 250000] [--queries 400]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fyan.prover.search import (DeclarationIndex, DeclarationList, DeclarationRecord, build_index,  # noqa: E402
                                write_declarations)

NAMESPACES = ["Nat", "Int", "Rat", "Real", "Complex", "Finset", "Set", "List", "Multiset", "Polynomial", "Matrix",
              "MeasureTheory", "Filter", "TopologicalSpace", "Metric", "LinearMap", "Submodule", "Ideal", "Subgroup",
              "MonoidHom", "RingHom", "ContinuousLinearMap", "IntervalIntegral", "Asymptotics", "ZMod", "Fintype",
              "Equiv", "Function", "Order", "Lattice", "CategoryTheory", "AlgebraicGeometry", "NumberField"]
STEMS = ["add", "mul", "sub", "div", "neg", "inv", "pow", "comm", "assoc", "left", "right", "cancel", "zero", "one",
         "succ", "pred", "le", "lt", "ge", "eq", "ne", "pos", "nonneg", "mono", "antitone", "strictMono", "card", "sum",
         "prod", "map", "filter", "image", "preimage", "union", "inter", "compl", "mem", "subset", "empty", "univ",
         "continuous", "deriv", "integral", "norm", "dist", "tendsto", "limit", "measurable", "integrable", "finite",
         "injective", "surjective", "bijective", "iff", "of", "self", "symm", "trans", "refl", "smul", "dvd", "gcd",
         "lcm", "prime", "coprime", "degree", "eval", "coeff", "det", "trace", "rank", "span", "ker", "range",
         "comap", "closure", "interior", "frontier", "isOpen", "isClosed", "isCompact", "bounded", "sup", "inf"]
TYPES = ["ℕ", "ℤ", "ℚ", "ℝ", "ℂ", "α", "β", "Finset α", "Set α", "Polynomial R", "Matrix n n R", "E"]
OPS = ["+", "*", "-", "/", "^", "≤", "<", "=", "≠", "∣", "∈", "⊆", "∩", "∪", "•"]
WORDS = ["the", "sum", "of", "a", "finite", "set", "is", "commutative", "monotone", "continuous", "function", "integral",
         "bounded", "above", "by", "its", "norm", "limit", "sequence", "converges", "prime", "divides", "product"]


def generate(n: int, seed: int = 36) -> list[DeclarationRecord]:
    rnd = random.Random(seed)
    out, seen = [], set()
    while len(out) < n:
        ns = rnd.choice(NAMESPACES)
        sub = f"{rnd.choice(NAMESPACES)}." if rnd.random() < 0.15 else ""
        stem = "_".join(rnd.choice(STEMS) for _ in range(rnd.randint(2, 5)))
        name = f"{ns}.{sub}{stem}"
        if name in seen:
            name = f"{name}{len(out) % 97}'"
            if name in seen:
                continue
        seen.add(name)
        t = rnd.choice(TYPES)
        vs = rnd.sample("abcdefxyzmnpq", 3)
        binders = f"{{{' '.join(vs)} : {t}}}" + (f" (h : {vs[0]} {rnd.choice(OPS)} {vs[1]})" if rnd.random() < 0.6 else "")
        lhs = f"{vs[0]} {rnd.choice(OPS)} {vs[1]}"
        rhs = f"{vs[1]} {rnd.choice(OPS)} {vs[2]}" if rnd.random() < 0.7 else vs[2]
        concl = f"{lhs} {rnd.choice(['=', '≤', '<', '↔', '∣', '≠'])} {rhs}"
        kind = rnd.choices(["theorem", "def", "instance", "structure", "abbrev"], [80, 12, 5, 2, 1])[0]
        doc = " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(5, 14))) + "." if rnd.random() < 0.33 else None
        module = f"Mathlib.{ns}.{rnd.choice(['Basic', 'Defs', 'Lemmas', 'Order', 'Algebra'])}"
        out.append(DeclarationRecord(name=name, kind=kind, module=module, signature=f"{name} {binders} : {concl}",
                                     docstring=doc))
    return out


def queries(k: int, seed: int = 7) -> list[str]:
    rnd = random.Random(seed)
    out = []
    for i in range(k):
        if i % 2:
            out.append(f"_ {rnd.choice(OPS)} _ {rnd.choice(['=', '≤', '↔'])} _ {rnd.choice(OPS)} _")
        else:
            out.append(" ".join(rnd.choice(STEMS + NAMESPACES + WORDS) for _ in range(rnd.randint(1, 3))))
    return out


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child_build(folder: Path, count: int) -> dict:
    decls = folder / "declarations.jsonl"
    t0 = time.perf_counter()
    records = generate(count)
    write_declarations(decls, DeclarationList(toolchain="generated", dependencies="generated", count=count), records)
    del records
    gen_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    build_index(decls, folder / "index.sqlite")
    return {"generate_s": gen_s, "build_s": time.perf_counter() - t0, "peak_mib": peak_mib(),
            "index_mib": (folder / "index.sqlite").stat().st_size / 2**20}


def child_query(folder: Path, k: int) -> dict:
    idx = DeclarationIndex(folder / "index.sqlite")
    qs = queries(k)
    idx.search("warm up")
    times, cpu, empty = [], [], 0
    for q in qs:
        t0, c0 = time.perf_counter(), time.thread_time()
        r = idx.search(q, limit=10)
        times.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.thread_time() - c0) * 1000)
        empty += not r.hits
    times.sort()
    cpu.sort()
    return {"queries": len(qs), "p50_ms": statistics.median(times), "p95_ms": times[int(0.95 * (len(times) - 1))],
            "max_ms": times[-1], "cpu_p50_ms": statistics.median(cpu), "cpu_p95_ms": cpu[int(0.95 * (len(cpu) - 1))],
            "no_hits": empty, "peak_mib": peak_mib()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=250_000)
    ap.add_argument("--queries", type=int, default=400)
    ap.add_argument("--child", choices=["build", "query"])
    ap.add_argument("--folder", type=Path)
    args = ap.parse_args()
    if args.child:
        fn = child_build if args.child == "build" else child_query
        print(json.dumps(fn(args.folder, args.count if args.child == "build" else args.queries)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        def run(what: str) -> dict:
            proc = subprocess.run([sys.executable, __file__, "--child", what, "--folder", tmp, "--count", str(args.count),
                                   "--queries", str(args.queries)], capture_output=True, text=True, check=True)
            return json.loads(proc.stdout)
        b, q = run("build"), run("query")
    print(f"declarations: {args.count:,} (generated, Mathlib-like names and signatures; seed 36)")
    print(f"generate + write list: {b['generate_s']:.1f} s; index build: {b['build_s']:.1f} s; index file {b['index_mib']:.0f} MiB")
    print(f"peak RSS building: {b['peak_mib']:.0f} MiB (target <= 1024)")
    print(f"search over {q['queries']} queries (half words, half type patterns): p50 {q['p50_ms']:.1f} ms, "
          f"p95 {q['p95_ms']:.1f} ms (target < 50), max {q['max_ms']:.1f} ms, {q['no_hits']} without hits")
    print(f"CPU time of a search (the share of the wall time that is not waiting for a core): "
          f"p50 {q['cpu_p50_ms']:.1f} ms, p95 {q['cpu_p95_ms']:.1f} ms")
    print(f"load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"peak RSS querying: {q['peak_mib']:.0f} MiB (target <= 1024)")


if __name__ == "__main__":
    main()
