"""Module compilations of a whole run against the ideal, and peak concurrent Lean memory.

    python scripts/bench_builds.py [--units 300] [--failed 0.5] [--slots 4] [--seed 1]
                                   [--variants chain,wide] [--budget-mb 16384] [--limit-mb 8192]

A ``--units`` DAG (``chain``: each unit imports the one before it and sometimes an earlier
one, so late units sit ~units deep; ``wide``: layers of 30 units, each importing up to three
of the layer before) is ingested as a real project and run to completion by ``--slots``
threads in dependency order with Fyan's own workspace and gate code and the Lake double
(``tests/fakes/fake_lake.py``, which follows Lake's rebuild rules and logs each module it
compiles; it stands in for Lean, which cannot run here). Each unit makes 1 + f prove
attempts, f drawn per unit (mean ``--failed``); every attempt builds the candidate once in the
unit's workspace (``fyan.lakepackage.workspace``: the Formalizer's feedback build) and runs the
completion gate's builds once (``fyan.lakepackage.trusted``: prepare, build; a failed attempt is a
gate failure, back to prove). Model-driven stages and the inspector are not run: what is
measured is what the build protocol compiles.

Prints per build place (workspaces, gate, the project package) and in total: compilations
against the ideal — units x (1 + failed prove attempts per unit) per place, i.e. each attempt
compiles only its own module — as ``compilations=N ideal=M ratio=R`` (target <= 1.05), then
the peak concurrent Lean memory, each Lean process costing ``[lean] memory_limit_mb``
(``--limit-mb``), against ``[lean] memory_budget_mb`` (``--budget-mb``). On a Fyan without
memory admission the peak is what the slots allow.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import make_project, unit_id  # noqa: E402


def chain_dag(n: int, seed: int) -> dict[int, list[int]]:
    rng = random.Random(seed)
    deps: dict[int, list[int]] = {}
    for i in range(n):
        ds = {i - 1} if i else set()
        if i > 2 and rng.random() < 0.3:
            ds.add(rng.randrange(0, i - 1))
        deps[i] = sorted(ds)
    return deps


def wide_dag(n: int, seed: int, layer: int = 30) -> dict[int, list[int]]:
    rng = random.Random(seed)
    deps: dict[int, list[int]] = {}
    for i in range(n):
        lo = (i // layer - 1) * layer
        deps[i] = sorted(rng.sample(range(lo, lo + layer), rng.randint(1, 3))) if lo >= 0 else []
    return deps


def fake_toolchain(folder: Path) -> Path:
    """The toolchain double as executables (what ``tests/conftest.py``'s ``fake_lake`` installs):
    ``bin/lake`` and ``bin/lean`` beside it; returns ``lake``."""
    from tests.conftest import FakeLake

    return FakeLake(folder).path


class LeanMeter:
    """Counts Lean processes running at once (each ``lean`` process Fyan starts runs inside
    ``fyan.sandbox.runner.ProcessGroup.collect``, after any wait for memory), each at
    ``memory_limit_mb``."""

    def __init__(self, cost_mb: int) -> None:
        self.cost_mb = cost_mb
        self.lock = threading.Lock()
        self.running = 0
        self.peak = 0

    def wrap(self, fn):
        def run(*args, **kwargs):
            with self.lock:
                self.running += 1
                self.peak = max(self.peak, self.running)
            try:
                return fn(*args, **kwargs)
            finally:
                with self.lock:
                    self.running -= 1

        return run


def run_variant(name: str, deps: dict[int, list[int]], args, work: Path) -> dict:
    import fyan.sandbox.runner as runner
    from fyan.gates.stages import CheckOutcome
    from fyan.lakepackage import trusted
    from fyan.lakepackage.package import model_part, render_unit_file, unit_module
    from fyan.lean.toolchain import discover
    from fyan.lakepackage.workspace import compile_candidate, prepare_workspace
    from fyan.project import Project
    from fyan.stages import stage_spec
    from fyan.state.gateway import Gateway
    from fyan.state.models import Stage

    rng = random.Random(args.seed + 7)
    extra = f"[lean]\nmemory_limit_mb = {args.limit_mb}\n"
    admission = _admission_module()
    if admission is not None:
        extra += f"memory_budget_mb = {args.budget_mb}\n"
    folder = work / name
    make_project(folder, deps, parallelism=args.slots, extra=extra)
    project = Project.open(folder)
    cfg = project.config.lean
    disc = discover(cfg, cwd=project.paths.lean)
    assert disc.toolchain is not None, disc.problem
    tc = disc.toolchain
    setup = trusted.resolve_setup(project, tc)
    meter = LeanMeter(cfg.memory_limit_mb)
    original = runner.ProcessGroup.collect
    runner.ProcessGroup.collect = meter.wrap(original)
    if admission is not None:
        admission.configure(cfg)
    failures = {unit_id(i): min(3, int(rng.expovariate(1 / args.failed))) if args.failed else 0 for i in deps}
    gate_lock = threading.Lock()  # one gateway (one SQLite connection) shared by the threads

    def gate_check(ctx):
        text = (ctx.attempt_dir / "Basic.lean").read_bytes() if (ctx.attempt_dir / "Basic.lean").is_file() else \
            (ctx.project.paths.unit(ctx.unit.id) / "Basic.lean").read_bytes()
        ws = trusted.prepare(ctx.project, ctx.store, ctx.unit, {"Basic": text}, purpose="gate", toolchain=tc)
        module = unit_module(ctx.project, ctx.unit)
        try:
            gate_lock.release()  # the builds run outside the gateway's lock, as in a real run
            try:
                first, build = trusted.build(ws, cfg, ctx.attempt_dir, trusted=ws.upstream_modules,
                                             candidate=[module])
            finally:
                gate_lock.acquire()
            if build is None or not build.ok:
                return CheckOutcome(False, f"gate build failed: {(first or build).reason if (first or build) else '?'}")
            if b"sorry" in text:
                return CheckOutcome(False, "sorry (benchmark: a failed prove attempt)", rewind_to=Stage.PROVE)
            # the gate hands its compiled module to the gateway
            return CheckOutcome(True, "gate passed (benchmark)", derived=trusted.module_outputs(ws, module))
        finally:
            ws.remove()

    checks = {s: (lambda ctx: CheckOutcome(True, "ok (benchmark double)")) for s in Stage}
    checks[Stage.GATE] = gate_check
    gw = Gateway(project, checks)

    def stage(unit_id_: str, st: Stage, files: dict[str, str] | None = None):
        with gate_lock:
            run = gw.begin(unit_id_, st, 10)
            adir = project.paths.root / run.attempt_dir
            for rel in stage_spec(st).outputs:
                (adir / rel).parent.mkdir(parents=True, exist_ok=True)
                (adir / rel).write_text((files or {}).get(rel, f"{rel} for {unit_id_}\n"))
            return gw.finish(run)

    def one_unit(uid: str) -> None:
        with gate_lock:
            unit = gw.store.unit(uid)
        for st in (Stage.REASON, Stage.PLAN, Stage.AUDIT):
            stage(uid, st)
        module = unit_module(project, unit)
        for k in range(failures[uid] + 1):
            body = f"theorem t_{uid.replace('-', '_')} : True := " + ("sorry" if k < failures[uid] else "trivial")
            with gate_lock:
                text = render_unit_file(project, gw.store, unit, body, "Basic")
            ws = _prepare_workspace(prepare_workspace, project, gw.store, unit, text, gate_lock)
            compile_candidate(project, ws, setup, module, project.paths.state / "bench-logs" / uid, f"attempt-{k}")
            assert model_part(text)
            stage(uid, Stage.PROVE, {"Basic.lean": text})
            run = stage(uid, Stage.GATE)
            if (k < failures[uid]) == (run.status.value == "succeeded"):
                raise SystemExit(f"{uid} attempt {k}: gate {run.status.value} ({run.reason})")

    ids = {unit_id(i): [unit_id(d) for d in ds] for i, ds in deps.items()}
    with gate_lock:
        known = {u.id for u in gw.store.units()}
        real = {d.unit: set() for d in gw.store.deps()}
        for d in gw.store.deps():
            real[d.unit].add(d.depends_on)
    missing = set(ids) - known
    assert not missing, f"intake lost units {sorted(missing)[:5]}"
    waiting = {u: set(real.get(u, set())) for u in ids}
    done: set[str] = set()
    start = time.monotonic()
    with ThreadPoolExecutor(args.slots) as pool:
        running = {}
        while len(done) < len(ids):
            for u in [u for u, w in waiting.items() if w <= done and u not in running.values()]:
                running[pool.submit(one_unit, u)] = u
                waiting.pop(u)
            finished, _ = wait(list(running), return_when=FIRST_COMPLETED)
            for f in finished:
                f.result()
                done.add(running.pop(f))
    elapsed = time.monotonic() - start
    gw.close()
    runner.ProcessGroup.collect = original
    compiles = [json.loads(line) for line in Path(os.environ["FYAN_FAKE_COMPILES"]).read_text().splitlines()]
    os.environ["FYAN_FAKE_COMPILES"] = str(work / f"compiles-{name}-next.jsonl")
    places = Counter()
    for c in compiles:
        pkg = c["package"]
        places["workspaces" if "/workspaces/" in pkg else "gate" if "/.fyan/gate/" in pkg else "package"] += 1
    attempts = sum(1 + f for f in failures.values())
    peak_adm = admission.peak_admitted_mb() if admission is not None else None
    return {"variant": name, "units": len(ids), "attempts": attempts, "places": places, "total": len(compiles),
            "depth": _depth(real), "peak_processes": meter.peak, "peak_mb": meter.peak * cfg.memory_limit_mb,
            "peak_admitted_mb": peak_adm, "budget_mb": getattr(cfg, "memory_budget_mb", None),
            "limit_mb": cfg.memory_limit_mb, "elapsed_s": elapsed}


def _prepare_workspace(prepare_workspace, project, store, unit, text, lock):
    import inspect

    with lock:
        if "store" in inspect.signature(prepare_workspace).parameters:
            return prepare_workspace(project, unit, {"Basic": text}, store=store)
        return prepare_workspace(project, unit, {"Basic": text})


def _admission_module():
    try:
        from fyan.sandbox import admission
    except ImportError:  # a Fyan from before compiled outputs were recorded
        return None
    return admission


def _depth(real: dict[str, set[str]]) -> int:
    memo: dict[str, int] = {}

    def d(u: str) -> int:
        if u not in memo:
            memo[u] = 1 + max((d(x) for x in real.get(u, ())), default=0)
        return memo[u]

    return max((d(u) for u in real), default=1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--units", type=int, default=300)
    ap.add_argument("--failed", type=float, default=0.5, help="mean failed prove attempts per unit")
    ap.add_argument("--slots", type=int, default=4, help="[scheduler] parallelism: units in flight")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--variants", default="chain,wide")
    ap.add_argument("--budget-mb", type=int, default=16384, help="[lean] memory_budget_mb")
    ap.add_argument("--limit-mb", type=int, default=8192, help="[lean] memory_limit_mb")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="fyan-bench-builds-"))
    os.environ["FYAN_LEAN__LAKE"] = str(fake_toolchain(work))
    os.environ["FYAN_LEAN__SANDBOX"] = "off"
    makers = {"chain": chain_dag, "wide": wide_dag}
    for name in args.variants.split(","):
        os.environ["FYAN_FAKE_COMPILES"] = str(work / f"compiles-{name}.jsonl")
        r = run_variant(name, makers[name](args.units, args.seed), args, work)
        ideal = r["attempts"]
        print(f"{name}: {r['units']} units, depth {r['depth']}, {r['attempts']} prove attempts "
              f"({r['attempts'] - r['units']} failed), {r['elapsed_s']:.0f} s")
        for place in ("workspaces", "gate", "package"):
            n = r["places"].get(place, 0)
            print(f"  {place}: compilations={n} ideal={ideal if place != 'package' else 0}"
                  + (f" ratio={n / ideal:.2f}" if place != "package" else ""))
        print(f"  total: compilations={r['total']} ideal={2 * ideal} ratio={r['total'] / (2 * ideal):.2f} "
              "(target <= 1.05)")
        adm = r["peak_admitted_mb"]
        print(f"  peak concurrent Lean memory: {r['peak_processes']} processes x {r['limit_mb']} MiB = "
              f"{r['peak_mb']} MiB" + (f" (admitted peak {adm} MiB)" if adm is not None else "")
              + f" against budget {r['budget_mb'] if r['budget_mb'] is not None else '(none: no admission)'}"
              + (" MiB" if r["budget_mb"] is not None else ""))


if __name__ == "__main__":
    main()
