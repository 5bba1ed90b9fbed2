"""Orchestrator overhead on a 500-unit random DAG with instant agents and checks.

    python scripts/bench_overhead.py [--units 500] [--parallelism 4] [--seed 1] [--profile] [--backend local|ray]

The agent doubles write each stage's outputs at once and every check passes at once (they
stand in for the model calls and the Lean toolchain), so the whole wall time is Fyan's own
work: scheduling, opening and closing every attempt through the gateway (one SQLite
transaction each, files staged with fsync, then published), the ledger, the Lean package
sync after each gate. Prints the per-transition overhead (ms; a transition = one stage
attempt, opened and closed), the share of wall time that is overhead (agents take ~0 s, so
close to 100%: the doubles only write their files), and the peak resident memory of the process (MiB). Targets: < 5 ms per
transition, < 200 MB.

``--backend ray`` runs every attempt as a Ray task on a one-machine Ray (started for the run,
in a private network namespace: the script re-runs itself under ``unshare -n``, as root); the
figure then includes Ray's own dispatch. The cost per transition must not grow with the
project: compare ``--units 500`` with ``--units 5000`` on each backend.

``--method``: ``baseline`` runs with nothing added and prints the figures as
this bench computed them before (turn-2's method: per-transition overhead = (wall time − the
agents' time spread over the slots) / transitions, and the process's CPU time / transitions);
``phases`` runs with the phase timers (``benchlib.Phases``) and prints the same two figures
of the timed run and the time per transition of each phase (state writes, state reads, hashing,
file I/O, dispatch, other: thread time summed over the loop and worker threads); ``both`` (the
default) does both runs on the same DAG in one invocation, so the
figure against the target comes from the run with nothing added and the breakdown from the timed
run, side by side; each method runs ``--repeat`` times (3), interleaved, and its figures are the
medians, every run's value printed (the timers themselves cost ~5-15 % of a transition: compare the two runs'
figures). The load average is printed: on a shared machine the wall figure moves with it, the CPU
figure much less; the printed reference (a 10M-iteration Python loop) says how fast this machine
runs Python at that moment (a VM's speed moves with its host's load). Waiting for the bookkeeping
lock (``fyan.executor.bookkeeping``) counts as "other" wall time in the breakdown. A 10-unit warm-up run comes first and is not reported (one-time costs of a
process belong to the restart figure, ``scripts/bench_resume.py``).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import PASSING, agents_for, instant_agent, make_project, no_provider, peak_rss_mib, random_dag  # noqa: E402


def run_once(args, deps: dict, timed: bool) -> dict:
    """One run of the engine on a fresh scratch project of ``deps``; ``timed``: with the phase
    timers installed. Returns the figures (seconds, counts) and, timed, the breakdown lines."""
    from fyan.orchestrator.engine import Engine
    from fyan.state.gateway import Gateway

    where = args.dir or ("/dev/shm" if Path("/dev/shm").is_dir() else None)
    with tempfile.TemporaryDirectory(prefix="fyan-bench-overhead-", dir=where) as tmp:
        project = make_project(Path(tmp) / "p", deps, parallelism=args.parallelism,
                               extra=f'[executor]\nbackend = "{args.backend}"\n')
        phases = None
        if timed and args.backend == "local":
            from benchlib import Phases

            phases = Phases()
            phases.install(Engine)
        gateway = Gateway(project, PASSING)
        agent_time = [0.0]
        lock = threading.Lock()

        def timed_agent(session, ctx):
            t = time.perf_counter()
            instant_agent(session, ctx)
            with lock:
                agent_time[0] += time.perf_counter() - t

        if args.backend == "ray":  # the doubles run in Ray's worker processes: ship them by value
            import benchlib
            from ray import cloudpickle

            cloudpickle.register_pickle_by_value(benchlib)
            agents = agents_for(instant_agent)  # their own time is not reported back; counted as overhead
        else:
            agents = agents_for(phases.timed("agents", timed_agent) if phases else timed_agent)
        engine = Engine(project, gateway, agents=agents, providers=no_provider)
        prof = cProfile.Profile() if args.profile else None
        thread_profiles: list[cProfile.Profile] = []
        if prof:  # the attempts run in the engine's worker threads: profile those too
            pool_loop = engine._pool_loop

            def profiled_pool_loop():
                p = cProfile.Profile()
                thread_profiles.append(p)
                p.enable()
                try:
                    pool_loop()
                finally:
                    p.disable()

            engine._pool_loop = profiled_pool_loop
        cpu0 = time.process_time()
        t0 = time.perf_counter()
        if prof:
            prof.enable()
        try:
            summary = engine.run()
        finally:
            if prof:
                prof.disable()
            if phases:
                phases.uninstall()
        wall = time.perf_counter() - t0
        cpu = time.process_time() - cpu0
        transitions = len(gateway.store.runs())
        problems = engine.ledger.verify(gateway.store)
        gateway.close()
    out = {"wall": wall, "cpu": cpu, "agents": agent_time[0], "transitions": transitions, "where": where,
           "complete": summary.counts.get("complete", 0), "units": summary.units, "problems": problems,
           "phases": phases.report(transitions) if phases else None}
    if prof:
        print("loop thread:")
        pstats.Stats(prof).sort_stats("cumulative").print_stats(25)
        print("worker threads (all attempts):")
        stats = pstats.Stats(thread_profiles[0])
        for p in thread_profiles[1:]:
            stats.add(p)
        stats.sort_stats("tottime").print_stats(25)
    return out


def print_figures(label: str, runs: list[dict], parallelism: int) -> None:
    """The figures of ``runs`` (repeats of one method): the median of each, and every run's value."""
    import statistics

    def per_transition(r: dict) -> float:
        return 1000 * (r["wall"] - r["agents"] / parallelism) / max(1, r["transitions"])  # agents spread over the slots

    def cpu(r: dict) -> float:
        return 1000 * r["cpu"] / max(1, r["transitions"])

    def fig(f) -> str:
        values = [f(r) for r in runs]
        return f"{statistics.median(values):.2f} ms" + (f" (runs: {', '.join(f'{v:.2f}' for v in values)})"
                                                        if len(values) > 1 else "")

    r0 = runs[0]
    walls = ", ".join(f"{r['wall']:.2f}" for r in runs)
    print(f"{label}, {len(runs)} run(s):")
    print(f"  complete {min(r['complete'] for r in runs)}/{r0['units']} in every run, ledger agrees with store: "
          f"{not any(r['problems'] for r in runs)}; transitions (stage attempts opened and closed) per run: "
          f"{r0['transitions']}; wall time {walls} s")
    print(f"  per-transition overhead (turn-2's method): median {fig(per_transition)} (target < 5 ms)")
    print(f"  CPU time of this process per transition (turn-2's method): median {fig(cpu)} (all threads: above the "
          "wall figure when threads overlap on several cores; with --backend ray the workers' CPU is not in it)")
    share = statistics.median(100 * (r["wall"] - r["agents"] / parallelism) / r["wall"] for r in runs)
    print(f"  overhead share of wall time: {share:.0f}% (the agent doubles' own work, spread over {parallelism} "
          "slots, is the rest)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--units", type=int, default=500)
    ap.add_argument("--parallelism", type=int, default=4)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--profile", action="store_true",
                    help="print the 25 most expensive functions of the loop thread and of the worker threads")
    ap.add_argument("--backend", choices=["local", "ray"], default="local",
                    help="where attempts run ([executor] backend); ray: a one-machine Ray in a private network namespace")
    ap.add_argument("--dir", help="folder for the scratch project (default: tmpfs /dev/shm when present, so the "
                    "figure is Fyan's own work; give a folder on a disk to include its fsync and metadata latency)")
    ap.add_argument("--method", choices=["baseline", "phases", "both"], default="both",
                    help="baseline: one run, nothing added (turn-2's figures); phases: one run with the phase timers "
                    "(figures and breakdown); both: the two runs, one after the other")
    ap.add_argument("--repeat", type=int, default=3,
                    help="runs of each method (interleaved); the figures are their medians (default 3)")
    args = ap.parse_args()
    load_before = os.getloadavg()
    if args.backend == "ray":
        from benchlib import in_private_netns

        in_private_netns()
        import ray

        ray.init(num_cpus=args.parallelism, resources={"lean": args.parallelism}, include_dashboard=False,
                 log_to_driver=False)
    deps = random_dag(args.units, args.seed)
    t = time.perf_counter()
    x = 0
    for i in range(10_000_000):
        x += i
    reference = time.perf_counter() - t
    # warm-up: a 10-unit run first, not reported, so that neither measured run pays the one-time
    # costs of a process (the modules imported at the first attempt, the prompts unpacked, the
    # executor's set-up): those are the restart's, measured by scripts/bench_resume.py
    run_once(args, random_dag(10, args.seed), timed=False)
    untimed: list[dict] = []
    timed: list[dict] = []
    for _ in range(args.repeat):  # interleaved, so a change of the machine's load falls on both methods
        if args.method in ("baseline", "both"):
            untimed.append(run_once(args, deps, timed=False))
        if args.method in ("phases", "both"):
            timed.append(run_once(args, deps, timed=True))
    results = [(label, runs) for label, runs in (("run with nothing added (turn-2's method)", untimed),
                                                 ("run with the phase timers", timed)) if runs]
    load_after = os.getloadavg()
    print(f"backend: {args.backend}, method: {args.method}")
    print(f"load average (1, 5, 15 min) before: {' '.join(f'{x:.2f}' for x in load_before)}, after: "
          f"{' '.join(f'{x:.2f}' for x in load_after)} on {os.cpu_count()} CPUs")
    print(f"machine reference: a 10M-iteration Python loop took {reference:.3f} s before the runs")
    print(f"units: {args.units} ({sum(len(d) for d in deps.values())} edges), parallelism {args.parallelism}; "
          f"project folder: {results[0][1][0]['where'] or tempfile.gettempdir()}")
    for label, runs in results:
        print_figures(label, runs, args.parallelism)
        if runs[0]["phases"]:
            print("  per transition, by phase (thread time of the loop and worker threads; the timed run "
                  "with the median wall time):")
            for line in sorted(runs, key=lambda r: r["wall"])[len(runs) // 2]["phases"]:
                print("  " + line)
    print(f"peak resident memory: {peak_rss_mib():.0f} MiB (target < 200 MB)")
    ok = all(r["complete"] == r["units"] and not r["problems"] for _, runs in results for r in runs)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
