"""The ``ray`` backend on a simulated cluster: dispatch overhead, makespan, node loss.

    python scripts/bench_ray.py [--units 300] [--scale 0.1] [--seed 1] [--nodes 1,2,4] [--slots 2]

Runs as root inside a private network namespace with only loopback (the script re-runs itself
under ``unshare -n``; Ray then binds 127.0.0.1), with ``RAY_USAGE_STATS_ENABLED=0``. The
cluster is ``ray.cluster_utils.Cluster`` on this machine: a head that runs no task, and
simulated nodes, each with ``--slots`` CPUs and as many units of the ``lean`` resource.

1. **Dispatch overhead per attempt**: 60 units, instant agent doubles, one attempt at a time,
   on ``local`` and on ``ray`` (one node): wall time per attempt, and the difference — what
   going through Ray adds to each attempt.
2. **Makespan**: a random 300-unit DAG (as ``bench_makespan.py``: window 40, up to 3
   dependencies); each (unit, stage) takes a drawn duration (stage share × a log-normal per-unit
   factor × ``--scale`` seconds) and the agent doubles sleep that long on the node the task was
   placed on. For 1, 2 and 4 nodes (``[scheduler] parallelism`` = the cluster's slots):
   makespan against the lower bound max(critical path, total work / slots). Target at 4 nodes:
   ratio <= 1.10.
3. **Node loss**: the 4-node run again, two nodes removed while it runs (at 25% and 50% of the
   expected makespan): ``lost`` (units not complete at the end, or a stage without its
   successful run) and ``duplicated`` (a stage of a unit that succeeded more than once).
   Target: 0 and 0. Interrupted attempts (dispatched again) are counted too.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import (  # noqa: E402
    PASSING, agents_for, in_private_netns, instant_agent, make_project, no_provider, random_dag, sleeping_agent,
)
from bench_makespan import durations, lower_bound  # noqa: E402


def run_project(deps, agent, slots: int, backend: str, where: str, during=None):
    """Run a project of ``deps`` with ``agent`` on ``backend``; returns (wall s, summary, runs)."""
    from fyan.orchestrator.engine import Engine
    from fyan.state.gateway import Gateway

    with tempfile.TemporaryDirectory(prefix=f"fyan-bench-ray-{backend}-", dir=where) as tmp:
        project = make_project(Path(tmp) / "p", deps, parallelism=slots, extra=f'[executor]\nbackend = "{backend}"\n')
        gateway = Gateway(project, PASSING)
        engine = Engine(project, gateway, agents=agents_for(agent), providers=no_provider)
        watcher = None
        if during is not None:
            watcher = threading.Thread(target=during, daemon=True)
            watcher.start()
        t0 = time.perf_counter()
        summary = engine.run()
        wall = time.perf_counter() - t0
        runs = gateway.store.runs()
        gateway.close()
        global LAST_TIMINGS
        LAST_TIMINGS = engine.executor.timings()
    return wall, summary, runs


LAST_TIMINGS: dict = {}


def phases() -> str:
    t = LAST_TIMINGS
    return (f"per attempt: inputs {1000 * t['inputs']:.1f} ms, transport {1000 * t['transport']:.1f} ms, "
            f"on the node {1000 * t['node']:.1f} ms, taking in {1000 * t['collect']:.1f} ms")


def _warm() -> None:
    """Import what a task imports, in a worker process (Ray starts them lazily)."""
    import fyan.agents.stages  # noqa: F401
    import fyan.executor.worker  # noqa: F401
    import fyan.gates.completion  # noqa: F401

    time.sleep(1.0)


def warm_up(ray, slots: int) -> float:
    """Start and warm every worker process of the cluster (seconds taken): a process imports
    Fyan once, on its first task; the makespans below are those of a warm cluster."""
    t0 = time.perf_counter()
    fn = ray.remote(num_cpus=1)(_warm)
    ray.get([fn.remote() for _ in range(slots)])
    return time.perf_counter() - t0


def _echo(payload: bytes, seconds: float) -> bytes:
    time.sleep(seconds)
    return payload


def bare_round_trip(ray, slots: int, n: int = 10) -> float:
    """Median seconds Ray itself adds to a task carrying 10 kB each way, ``slots`` clients at once
    (what any Ray task costs on this machine now, Fyan apart)."""
    fn = ray.remote(num_cpus=1, max_retries=0)(_echo)
    out: list[float] = []

    def client():
        for _ in range(n):
            t = time.perf_counter()
            ray.get(fn.remote(b"x" * 10_000, 0.1))
            out.append(time.perf_counter() - t - 0.1)

    threads = [threading.Thread(target=client) for _ in range(slots)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sorted(out)[len(out) // 2]


def losses(summary, runs) -> tuple[int, int, int]:
    """(lost, duplicated, interrupted) of a finished run (module docstring)."""
    from fyan.state.models import RunStatus, Stage

    ok: dict[tuple[str, str], int] = {}
    for r in runs:
        if r.status is RunStatus.SUCCEEDED:
            ok[(r.unit, r.stage.value)] = ok.get((r.unit, r.stage.value), 0) + 1
    units = {r.unit for r in runs}
    missing = summary.units - summary.counts.get("complete", 0)
    missing += sum(1 for u in units for s in Stage if (u, s.value) not in ok)
    duplicated = sum(n - 1 for n in ok.values() if n > 1)
    interrupted = sum(1 for r in runs if r.status is RunStatus.INTERRUPTED)
    return missing, duplicated, interrupted


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--units", type=int, default=300)
    ap.add_argument("--scale", type=float, default=0.1,
                    help="seconds per duration share (default 0.1: a mean attempt of 0.28 s; real ones take minutes)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--nodes", default="1,2,4", help="node counts to measure, increasing (default 1,2,4)")
    ap.add_argument("--slots", type=int, default=2, help="task slots (CPUs, lean units) per simulated node")
    ap.add_argument("--dir", help="folder for the scratch projects (default: tmpfs /dev/shm when present)")
    args = ap.parse_args()
    in_private_netns()
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    where = args.dir or ("/dev/shm" if Path("/dev/shm").is_dir() else tempfile.gettempdir())
    counts = [int(n) for n in args.nodes.split(",")]

    import benchlib
    import ray
    from ray import cloudpickle
    from ray.cluster_utils import Cluster

    cloudpickle.register_pickle_by_value(benchlib)  # the agent doubles, on the workers
    t0 = time.perf_counter()
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "object_store_memory": 100 * 2**20})
    nodes = []

    def add_node():
        nodes.append(cluster.add_node(num_cpus=args.slots, resources={"lean": args.slots},
                                      object_store_memory=100 * 2**20,
                                      env_vars={"FYAN_WORKER_DIR": f"{where}/fyan-bench-ray-node-{len(nodes)}"}))

    add_node()
    ray.init(address=cluster.address, log_to_driver=False)
    warm = warm_up(ray, args.slots)
    print(f"cluster: head + 1 node of {args.slots} slots, started in {time.perf_counter() - t0:.1f} s "
          f"(worker processes warmed in {warm:.1f} s)", flush=True)

    # 1. dispatch overhead per attempt
    small = random_dag(60, args.seed)
    per = {}
    for backend in ("local", "ray"):
        wall, summary, runs = run_project(small, instant_agent, 1, backend, where)
        assert summary.counts.get("complete") == summary.units, summary.counts
        per[backend] = 1000 * wall / len(runs)
        print(f"  {backend}: {phases()}", flush=True)
    print(f"dispatch per attempt (60 units, {len(runs)} attempts, one at a time): local {per['local']:.1f} ms, "
          f"ray {per['ray']:.1f} ms: Ray adds {per['ray'] - per['local']:.1f} ms per attempt", flush=True)

    # 2. makespan on 1, 2, 4 nodes
    deps = random_dag(args.units, args.seed)
    dur = durations(deps, args.seed, args.scale)
    print(f"project: {args.units} units ({sum(len(d) for d in deps.values())} edges), {len(dur)} attempts, "
          f"total work {sum(dur.values()):.1f} s", flush=True)
    for n in counts:
        while len(nodes) < n:
            add_node()
        cluster.wait_for_nodes()
        slots = n * args.slots
        warm_up(ray, slots)
        cp, work, bound = lower_bound(deps, dur, slots)
        bare = bare_round_trip(ray, slots)
        load = os.getloadavg()[0]
        wall, summary, runs = run_project(deps, sleeping_agent(dur), slots, "ray", where)
        lost, dup, _ = losses(summary, runs)
        print(f"{n} nodes ({slots} slots): makespan {wall:.2f} s, lower bound {bound:.2f} s (critical path {cp:.2f} s, "
              f"work/slots {work:.2f} s), ratio {wall / bound:.3f}" + (" (target <= 1.10)" if n == 4 else "")
              + (f"; lost {lost}, duplicated {dup}" if lost or dup else ""), flush=True)
        print(f"  {phases()}; a bare Ray task costs {1000 * bare:.1f} ms here now ({slots} at once; "
              f"load average {load:.1f} on {os.cpu_count()} CPUs)", flush=True)

    # 3. two node removals during a 4-node run
    while len(nodes) < 4:
        add_node()
    cluster.wait_for_nodes()
    slots = 4 * args.slots
    warm_up(ray, slots)
    _, _, bound = lower_bound(deps, dur, slots)
    live = list(nodes[-4:])

    def remove_two():
        for frac in (0.25, 0.5):
            time.sleep(bound * frac - (bound * 0.25 if frac == 0.5 else 0.0))
            node = live.pop(0)
            cluster.remove_node(node)
            print(f"  removed a node at {frac:.0%} of the expected makespan", flush=True)

    wall, summary, runs = run_project(deps, sleeping_agent(dur), slots, "ray", where, during=remove_two)
    lost, dup, interrupted = losses(summary, runs)
    print(f"4 nodes, two removed during the run: makespan {wall:.2f} s; lost {lost}, duplicated {dup} (target 0, 0); "
          f"{interrupted} attempt(s) interrupted and dispatched again", flush=True)
    ray.shutdown()
    cluster.shutdown()
    for i in range(len(nodes)):  # the simulated nodes' worker folders
        shutil.rmtree(f"{where}/fyan-bench-ray-node-{i}", ignore_errors=True)
    return 0 if lost == 0 and dup == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
