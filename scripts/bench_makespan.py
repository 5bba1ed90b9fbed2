"""Makespan of the critical-path scheduler against its lower bound, and against FIFO.

    python scripts/bench_makespan.py [--units 500] [--slots 4] [--seed 1] [--scale 0.1]

The same kind of random DAG as ``bench_overhead.py``; each (unit, stage) takes a recorded
duration: the stage's typical share of a real unit's time (reason 1, plan 2, audit 1,
prove 6, gate 2, in units of ``--scale`` seconds) times a per-unit factor drawn from a
log-normal distribution (some units are much harder than others). The agent doubles sleep for
that long. The scheduler does not know the durations in advance: it estimates each stage
from the durations recorded so far (``Ledger.stage_cost``).

Prints, for critical-path-first and for a FIFO ready queue on the same input:
makespan / max(critical path, total work / slots). Target for critical-path-first: <= 1.05.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import PASSING, agents_for, make_project, no_provider, random_dag, sleeping_agent, unit_id  # noqa: E402

SHARE = {"reason": 1.0, "plan": 2.0, "audit": 1.0, "prove": 6.0, "gate": 2.0}


def durations(deps: dict[int, list[int]], seed: int, scale: float) -> dict[tuple[str, str], float]:
    rng = random.Random(seed + 1)
    out = {}
    for i in deps:
        factor = math.exp(rng.gauss(0.0, 0.6))
        for stage, share in SHARE.items():
            out[(unit_id(i), stage)] = scale * share * factor * math.exp(rng.gauss(0.0, 0.2))
    return out


def lower_bound(deps: dict[int, list[int]], dur: dict[tuple[str, str], float], slots: int) -> tuple[float, float, float]:
    """(critical path, total work / slots, the larger) in seconds."""
    finish: dict[int, float] = {}
    for i in sorted(deps):
        own = sum(dur[(unit_id(i), s)] for s in SHARE)
        finish[i] = own + max((finish[d] for d in deps[i]), default=0.0)
    cp = max(finish.values())
    work = sum(dur.values()) / slots
    return cp, work, max(cp, work)


def simulate(deps, dur, slots: int, policy: str) -> float:
    """The makespan the real ``Ledger`` and ``Scheduler`` reach in virtual time, with no
    overhead at all (what the policy itself is worth, apart from the machine)."""
    import heapq

    from fyan.orchestrator.ledger import Ledger
    from fyan.orchestrator.scheduler import Scheduler
    from fyan.state.models import RunStatus, StageRun, UnitRecord

    units = [UnitRecord(id=unit_id(i), order=i, kind="lemma", module=f"L{i}", layer=0, statements=[i],
                        provenance="doc.tex:1-1") for i in deps]
    ledger = Ledger(units, [(unit_id(i), unit_id(d)) for i, ds in deps.items() for d in ds], [], 3)
    sched = Scheduler(ledger, policy)  # type: ignore[arg-type]
    now, next_id, running, events = 0.0, 1, set(), []
    while True:
        free = slots - len(running)
        ready = [u for u in ledger.ready if u not in running]
        for u in sched.order(ready)[:free]:
            stage = ledger.views[u].next_stage
            run = StageRun(id=next_id, unit=u, stage=stage, attempt=1, status=RunStatus.RUNNING, started_at=now,
                           attempt_dir="-")
            next_id += 1
            ledger.record(run)
            running.add(u)
            heapq.heappush(events, (now + dur[(u, stage.value)], run.id, run))
        if not events:
            return now
        now, _, run = heapq.heappop(events)
        running.discard(run.unit)
        ledger.record(run.model_copy(update={"status": RunStatus.SUCCEEDED, "finished_at": now}))


def run_once(deps, dur, slots: int, policy: str, where: str | None) -> float:
    from fyan.orchestrator.engine import Engine
    from fyan.state.gateway import Gateway

    with tempfile.TemporaryDirectory(prefix=f"fyan-bench-makespan-{policy}-", dir=where) as tmp:
        project = make_project(Path(tmp) / "p", deps, parallelism=slots)
        gateway = Gateway(project, PASSING)
        engine = Engine(project, gateway, agents=agents_for(sleeping_agent(dur)), providers=no_provider,
                        policy=policy)
        t0 = time.perf_counter()
        summary = engine.run()
        wall = time.perf_counter() - t0
        gateway.close()
    if summary.counts.get("complete", 0) != summary.units:
        raise SystemExit(f"{policy}: not every unit completed: {summary.counts}")
    return wall


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--units", type=int, default=500)
    ap.add_argument("--slots", type=int, default=4)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--scale", type=float, default=0.1, help="seconds per duration share (default 0.1)")
    ap.add_argument("--window", type=int, default=12, help="dependencies are drawn from this many earlier units")
    ap.add_argument("--dir", help="folder for the scratch projects (default: tmpfs /dev/shm when present)")
    ap.add_argument("--policy", choices=["both", "critical-path", "fifo"], default="both")
    ap.add_argument("--simulate-only", action="store_true", help="only the zero-overhead simulation")
    args = ap.parse_args()
    where = args.dir or ("/dev/shm" if Path("/dev/shm").is_dir() else None)

    deps = random_dag(args.units, args.seed, window=args.window)
    dur = durations(deps, args.seed, args.scale)
    cp, work, bound = lower_bound(deps, dur, args.slots)
    print(f"units: {args.units} ({sum(len(d) for d in deps.values())} edges), slots {args.slots}, "
          f"total work {sum(dur.values()):.1f} s")
    print(f"critical path {cp:.2f} s, total work / slots {work:.2f} s -> lower bound {bound:.2f} s")
    policies = ["critical-path", "fifo"] if args.policy == "both" else [args.policy]
    for policy in policies:
        sim = simulate(deps, dur, args.slots, policy)
        print(f"{policy:>13}: simulated with zero overhead: makespan {sim:.2f} s, ratio {sim / bound:.3f}", flush=True)
        if args.simulate_only:
            continue
        wall = run_once(deps, dur, args.slots, policy, where)
        target = " (target <= 1.05)" if policy == "critical-path" else ""
        print(f"{policy:>13}: measured: makespan {wall:.2f} s, ratio {wall / bound:.3f}{target}; "
              f"Fyan's overhead {100 * max(0.0, wall - sim) / wall:.1f}% of the wall time", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
