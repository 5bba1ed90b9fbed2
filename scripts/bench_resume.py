"""Crash safety under random kills: 1,000 units, kill -9 at random moments, restart each time.

    python scripts/bench_resume.py [--units 1000] [--kills 200] [--seed 1] [--dir DIR]

Each round starts a daemon process on the project (``Daemon.serve``, the code behind
``fyan run``/``fyan daemon``: run lock, ``Gateway.recover``, ledger load, the start-up scan,
the run loop) whose agent doubles take 0-200 ms per stage and whose checks pass, and sends it
SIGKILL at a random moment: in most rounds 0-``--max-wait`` s after its first dispatch (during
agent runs, artifact copies, commits or publishing, wherever it falls), in the others
(``--early``, 15%) at a random moment of its start-up (during recovery). The daemon appends every transition it saw committed (an attempt started,
an attempt finished) to an acknowledgement log *after* the gateway returned. After the last
kill a final round runs to completion, then the store and the folder are checked:

* lost transitions — acknowledged but not in the store (with the status acknowledged), plus
  recorded artifacts whose file is missing or differs from the recorded hash;
* duplicated completions — a stage of a unit that succeeded more than once (the doubles
  always pass, so each stage should succeed exactly once: an interrupted attempt is re-run,
  a completed one never);
* restart to first dispatch — from the process start (before the interpreter starts) to the
  first attempt opened, for every round that got that far before its kill; also printed from
  the moment the daemon's modules are imported (the part Fyan's recovery controls: the rest is
  the Python interpreter and library imports, which depend on the machine's load).

Targets: 0 lost, 0 duplicated, restart to first dispatch < 1 s. Fyan's modules are compiled to
bytecode before the rounds (``bytecode_note``), as an installed Fyan's are.

Both figures are turn-2's method: from the process start, and from the moment the
daemon's modules are imported. The same rounds also give the breakdown (medians over the
restarts): interpreter start, imports, then inside ``Daemon.serve`` opening the project and its
lock, ``Gateway.recover``, ``Ledger.load``, the session start, the Lean package sync, the
start-up scan, and the rest (the engine's set-up, the first dispatch). The load average is
printed with the figures: on a shared machine they move with it.
"""

from __future__ import annotations

import time as _time

_SCRIPT_START = _time.time()  # before the imports below (benchlib imports Fyan's state modules)

import argparse  # noqa: E402
import os  # noqa: E402
import random  # noqa: E402
import signal  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections import Counter  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import PASSING, agents_for, instant_agent, make_project, no_provider, random_dag  # noqa: E402


def child(project_dir: str, ack_path: str, seed: int) -> int:
    """One daemon round (runs in the killed process)."""
    from fyan.daemon import Daemon, DaemonOptions
    from fyan.orchestrator.ledger import Ledger
    from fyan.project import Project
    from fyan.state.gateway import Gateway

    rng = random.Random(seed)
    fd = os.open(ack_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.write(fd, f"script_start {_SCRIPT_START:.6f}\n".encode())
    os.write(fd, f"serve_start {time.time():.6f}\n".encode())
    first = {"done": False}
    spent: dict[str, float] = {}

    def timed(owner, attr: str, name: str, *, static: bool = False) -> None:
        fn = getattr(owner, attr)

        def wrapper(*a, **kw):
            t = time.perf_counter()
            try:
                return fn(*a, **kw)
            finally:
                spent[name] = spent.get(name, 0.0) + time.perf_counter() - t

        setattr(owner, attr, staticmethod(wrapper) if static else wrapper)

    timed(Project, "open", "open project", static=True)
    timed(Gateway, "recover", "recover")
    timed(Ledger, "load", "ledger load", static=True)
    timed(Gateway, "start_session", "session")
    timed(Gateway, "sync_lean_package", "package sync")
    timed(Daemon, "scan", "scan")

    def agent(session, ctx) -> None:
        time.sleep(rng.random() * 0.2)
        instant_agent(session, ctx)

    def on_event(event, views) -> None:
        stage = getattr(event.stage, "value", event.stage)
        if event.status == "started" and not first["done"]:
            first["done"] = True
            os.write(fd, f"first_dispatch {time.time():.6f}\n".encode())
            os.write(fd, ("phases " + " ".join(f"{k.replace(' ', '_')}={v:.6f}" for k, v in spent.items())
                          + "\n").encode())
        if event.status in ("started", "succeeded", "failed"):
            os.write(fd, f"ack {event.unit} {stage} {event.status}\n".encode())

    options = DaemonOptions(watch=False, until_idle=True, engine_kwargs=dict(
        agents=agents_for(agent), providers=no_provider, checks=PASSING, critic=None))
    summary = Daemon(project_dir, options, on_event=on_event).serve()
    os.write(fd, f"done {summary.counts.get('complete', 0)} {summary.units}\n".encode())
    return 0


def verify(project_dir: Path, ack_path: Path) -> dict:
    from fyan.orchestrator.ledger import Ledger
    from fyan.project import Project
    from fyan.state.gateway import sha256_file
    from fyan.state.store import Store

    project = Project.open(project_dir)
    store = Store(project.paths.db)
    runs = store.runs()
    by_key: dict[tuple[str, str], Counter] = {}
    for r in runs:
        by_key.setdefault((r.unit, r.stage.value), Counter())[r.status.value] += 1
    lost = 0
    for line in ack_path.read_text().splitlines():
        parts = line.split()
        if parts[0] != "ack":
            continue
        _, unit, stage, status = parts
        seen = by_key.get((unit, stage), Counter())
        if status == "started" and not seen:
            lost += 1
        elif status in ("succeeded", "failed") and not seen[status]:
            lost += 1
    missing_files = 0
    for a in store.artifacts():
        path = project.paths.root / a.path
        if not path.is_file() or sha256_file(path) != a.sha256:
            missing_files += 1
    duplicated = sum(1 for c in by_key.values() if c["succeeded"] > 1)
    views = store.views(project.config.scheduler.attempts_per_stage)
    ledger = Ledger.load(store, project.config.scheduler.attempts_per_stage)
    return {
        "runs": len(runs), "interrupted": sum(c["interrupted"] for c in by_key.values()),
        "lost": lost + missing_files, "lost_files": missing_files, "duplicated": duplicated,
        "complete": sum(v.status.value == "complete" for v in views.values()), "units": len(views),
        "ledger_disagrees": len(ledger.verify(store)),
    }


def bytecode_note() -> str:
    """Compile Fyan's modules to bytecode ahead of the rounds, as an installed Fyan has them
    (pip compiles a package when it installs it; Python writes the bytecode at the first import
    otherwise). Without it, a checkout installed editable under ``PYTHONDONTWRITEBYTECODE=1`` (as
    on this project's machines) compiles every module again in every restart: ~0.15 s of the
    restart that no user's second run pays."""
    import compileall

    import fyan

    package = Path(fyan.__file__).resolve().parent
    ok = compileall.compile_dir(str(package), quiet=1)
    ok = compileall.compile_file(str(Path(__file__).resolve().parent / "benchlib.py"), quiet=1) and ok  # the harness
    flag = "set" if sys.flags.dont_write_bytecode else "not set"
    return (f"bytecode: Fyan's modules compiled ahead in {package} ({'ok' if ok else 'some failed'}); "
            f"PYTHONDONTWRITEBYTECODE is {flag} here")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--units", type=int, default=1000)
    ap.add_argument("--kills", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-wait", type=float, default=1.0, help="seconds from the first dispatch to the kill, at most")
    ap.add_argument("--early", type=float, default=0.15, help="share of kills at a random moment of the start-up")
    ap.add_argument("--dir", help="folder for the scratch project (default: the system temp folder, on disk)")
    ap.add_argument("--child", nargs=3, metavar=("PROJECT", "ACK", "SEED"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args.child[0], args.child[1], int(args.child[2]))

    rng = random.Random(args.seed)
    print(bytecode_note(), flush=True)
    with tempfile.TemporaryDirectory(prefix="fyan-bench-resume-", dir=args.dir) as tmp:
        t_setup = time.perf_counter()
        project = make_project(Path(tmp) / "p", random_dag(args.units, args.seed), parallelism=4)
        ack = Path(tmp) / "acks.log"
        print(f"project: {args.units} units ingested in {time.perf_counter() - t_setup:.1f} s ({project.paths.root})",
              flush=True)
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
        latencies: list[float] = []
        in_serve: list[float] = []
        breakdown: dict[str, list[float]] = {}
        load_before = os.getloadavg()
        killed_before_dispatch = 0
        finished_early = 0
        for k in range(args.kills):
            lines_before = len(ack.read_text().splitlines()) if ack.exists() else 0
            t0 = time.time()
            proc = subprocess.Popen([sys.executable, __file__, "--child", str(project.paths.root), str(ack),
                                     str(rng.randrange(1 << 30))], env=env, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE)
            if rng.random() < args.early:
                time.sleep(rng.uniform(0.0, args.max_wait))
            else:  # wait for the first dispatch (or the process to end), then a random moment
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline and proc.poll() is None:
                    if ack.exists() and any(x.startswith("first_dispatch") for x in
                                            ack.read_text().splitlines()[lines_before:]):
                        break
                    time.sleep(0.01)
                time.sleep(rng.uniform(0.0, args.max_wait))
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
            else:
                finished_early += 1
            _, err = proc.communicate()
            if proc.returncode not in (0, -signal.SIGKILL, 3):
                print(f"round {k}: the daemon failed (exit {proc.returncode}):\n{err.decode()[-2000:]}", file=sys.stderr)
                return 1
            new = ack.read_text().splitlines()[lines_before:] if ack.exists() else []
            firsts = [float(x.split()[1]) for x in new if x.startswith("first_dispatch")]
            serve = [float(x.split()[1]) for x in new if x.startswith("serve_start")]
            if firsts:
                latencies.append(firsts[0] - t0)
                if serve:
                    in_serve.append(firsts[0] - serve[0])
                starts = [float(x.split()[1]) for x in new if x.startswith("script_start")]
                phases = [x for x in new if x.startswith("phases")]
                if serve and starts and phases:
                    parts = {"interpreter start": starts[0] - t0, "imports": serve[0] - starts[0]}
                    parts.update({name.replace("_", " "): float(v) for name, v in
                                  (kv.split("=") for kv in phases[0].split()[1:])})
                    parts["other (engine set-up, first dispatch)"] = (
                        firsts[0] - serve[0] - sum(v for name, v in parts.items()
                                                   if name not in ("interpreter start", "imports")))
                    for name, v in parts.items():
                        breakdown.setdefault(name, []).append(v)
            elif not any(x.startswith("done") for x in new):
                killed_before_dispatch += 1
            if (k + 1) % 20 == 0:
                acks = sum(1 for x in ack.read_text().splitlines() if x.endswith(" succeeded"))
                print(f"  {k + 1} kills, {acks} stage successes acknowledged so far", flush=True)
        proc = subprocess.run([sys.executable, __file__, "--child", str(project.paths.root), str(ack), "0"],
                              env=env, capture_output=True, timeout=3600)
        if proc.returncode not in (0, 3):
            print(proc.stderr.decode()[-3000:], file=sys.stderr)
            return 1
        result = verify(project.paths.root, ack)
    load_after = os.getloadavg()
    print(f"load average (1, 5, 15 min) before: {' '.join(f'{x:.2f}' for x in load_before)}, after: "
          f"{' '.join(f'{x:.2f}' for x in load_after)} on {os.cpu_count()} CPUs")
    print(f"kills: {args.kills} (SIGKILL; {finished_early} round(s) had finished first, {killed_before_dispatch} "
          f"killed before their first dispatch)")
    print(f"final state: {result['complete']}/{result['units']} units complete, {result['runs']} stage runs, "
          f"{result['interrupted']} interrupted by kills and re-run; ledger disagrees with store: "
          f"{result['ledger_disagrees']}")
    print(f"lost transitions: {result['lost']} (of which artifact files: {result['lost_files']}) (target 0)")
    print(f"duplicated completions: {result['duplicated']} (target 0)")
    for label, values in (("restart to first dispatch (process start)", latencies),
                          ("  of which after the imports (lock, recover, load, scan)", in_serve)):
        if values:
            q = sorted(values)
            print(f"{label}: median {statistics.median(q):.3f} s, p95 {q[int(0.95 * (len(q) - 1))]:.3f} s, "
                  f"max {q[-1]:.3f} s over {len(q)} restarts (target < 1 s)")
    if breakdown:
        print("restart to first dispatch by phase (median s over the restarts, same rounds):")
        for k, v in breakdown.items():
            print(f"  {k:<40} {statistics.median(v):.3f} s")
    ok = result["lost"] == 0 and result["duplicated"] == 0 and result["complete"] == result["units"]
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
