"""Shared pieces of the orchestrator benchmarks (``bench_overhead``, ``bench_makespan``,
``bench_resume``): a random document DAG turned into a real project (TeX source → intake →
units), agent doubles that write each stage's declared outputs, and checks that pass.

The doubles stand in for the model calls and the Lean toolchain, so what the benchmarks time
is Fyan's own work: scheduling, the gateway's transactions, crash-safe publishing, the ledger.
"""

from __future__ import annotations

import os
import random
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fyan.stages import stage_spec  # noqa: E402
from fyan.state.gateway import CheckOutcome  # noqa: E402
from fyan.state.models import Stage  # noqa: E402


def random_dag(n: int, seed: int, *, max_deps: int = 3, window: int = 40) -> dict[int, list[int]]:
    """Unit i -> the earlier units it depends on: 0..max_deps of them, drawn from the
    ``window`` units before it (a window keeps long chains, like a textbook's)."""
    rng = random.Random(seed)
    deps: dict[int, list[int]] = {}
    for i in range(n):
        lo = max(0, i - window)
        k = min(i - lo, rng.randint(0 if i else 0, max_deps))
        deps[i] = sorted(rng.sample(range(lo, i), k)) if k else []
    return deps


def dag_tex(deps: dict[int, list[int]]) -> str:
    lines = []
    for i, ds in deps.items():
        refs = " ".join(f"By Lemma~\\ref{{l{d}}}." for d in ds)
        lines.append(f"\\begin{{lemma}}\\label{{l{i}}} Statement number {i} holds. {refs}\\end{{lemma}}")
    return "\n".join(lines) + "\n"


def make_project(folder: Path, deps: dict[int, list[int]], *, parallelism: int = 4, extra: str = ""):
    """A project in ``folder`` whose document has one lemma per DAG node, ingested."""
    from fyan.project import Project
    from fyan.specifier.ingest import ingest
    from fyan.state.gateway import Gateway

    (folder / "source").mkdir(parents=True, exist_ok=True)
    (folder / "source" / "doc.tex").write_text(dag_tex(deps), encoding="utf-8")
    (folder / "fyan.toml").write_text(
        '[project]\nname = "bench"\nsource = "source/doc.tex"\n[intake]\nterm_edges = false\n'
        # the benchmarks measure the stage pipeline; the Curator/Auditor (model calls after
        # completion, which these model-free doubles cannot answer) are off
        "[agents]\npost_completion = false\n"
        f"[scheduler]\nparallelism = {parallelism}\nattempts_per_stage = 3\n{extra}",
        encoding="utf-8",
    )
    project = Project.open(folder)
    gateway = Gateway(project)
    ingest(project, gateway)
    gateway.close()
    return project


def unit_id(i: int) -> str:
    return f"l{i}"


def instant_agent(session, ctx) -> None:
    """Writes the stage's declared outputs at once (stands in for a model-driven stage)."""
    for rel in stage_spec(ctx.run.stage).outputs:
        ctx.write(rel, f"{rel} for {ctx.unit.id}, run {ctx.run.id}\n")


def sleeping_agent(durations: dict[tuple[str, str], float]):
    """An agent double that takes the recorded duration (seconds) of its (unit, stage)."""

    def agent(session, ctx) -> None:
        time.sleep(durations[(ctx.unit.id, ctx.run.stage.value)])
        instant_agent(session, ctx)

    return agent


def passing(ctx) -> CheckOutcome:
    """Every check passes at once (stands in for the Lean toolchain and the audit)."""
    return CheckOutcome(True, "ok (benchmark double)")


PASSING = {s: passing for s in Stage}


def agents_for(fn) -> dict:
    """The agent double for every stage (for the gate it stands in for the toolchain's time)."""
    return {s: fn for s in Stage}


def peak_rss_mib() -> float:
    """Peak resident memory of this process, MiB (Linux ru_maxrss is KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class _NoModel:
    name = "none"

    def complete(self, request):
        raise AssertionError("benchmark agents make no model call")


def no_provider(stage: str) -> _NoModel:
    return _NoModel()


def in_private_netns() -> None:
    """Re-run this script inside a private network namespace with only loopback, where Ray
    binds 127.0.0.1 (outside one it binds the machine's external address). Needs root and
    ``unshare``; a no-op once inside (``FYAN_BENCH_NETNS=1``)."""
    if os.environ.get("FYAN_BENCH_NETNS") == "1":
        return
    import shutil

    if os.geteuid() != 0 or shutil.which("unshare") is None:
        raise SystemExit("the Ray benchmarks run Ray in a private network namespace: run them as root with "
                         "`unshare` installed (util-linux)")
    env = dict(os.environ, FYAN_BENCH_NETNS="1", RAY_USAGE_STATS_ENABLED="0")
    os.execvpe("unshare", ["unshare", "-n", "sh", "-c", 'ip link set lo up && exec "$0" "$@"', sys.executable,
                           *sys.argv], env)


os.environ.setdefault("FYAN_LEAN__SANDBOX", "off")


class Phases:
    """Where the orchestrator's time goes, per phase, for the benchmarks' breakdown.

    ``install()`` wraps the functions of each phase (module globals and class attributes of
    Fyan, in this process only) so that every call adds its *exclusive* time — nested phases
    are charged to the innermost — to its phase, per thread: wall (``perf_counter``) and CPU
    (``thread_time``) seconds. Phases: ``state writes`` (SQLite write transactions of the
    gateway and of the executor's replica, waiting for the writer's lock included), ``state
    reads`` (``Store`` queries), ``hashing`` (SHA-256 of artifacts, the inputs digest), ``file
    I/O`` (staging and publishing artifacts, a task's inputs put in place and its files
    collected and read back), ``dispatch`` (the run loop: scheduling, the ledger, taking results
    in; encoding and decoding tasks and results), ``agents`` (the doubles' own work, not
    overhead). ``other`` is the rest of the attempts' threads' time (``Engine._worker``:
    validation, logging, the check, …, and — wall time, not CPU — waiting for the bookkeeping lock,
    ``fyan.executor.bookkeeping``). Costs ~2 µs per wrapped call (two clock reads each way,
    one of them a system call: ``thread_time``); ``bench_overhead --method both`` shows the total."""

    NAMES = ("state writes", "state reads", "hashing", "file I/O", "dispatch", "agents", "other")

    def __init__(self) -> None:
        import threading

        self._local = threading.local()
        self._lock = threading.Lock()
        self._threads: list[dict[str, list[float]]] = []  # each thread's own totals (no lock per call)
        self._undo: list = []

    def _state(self):
        stack = getattr(self._local, "stack", None)
        if stack is None:
            stack = self._local.stack = []
            self._local.acc = {n: [0.0, 0.0] for n in self.NAMES}
            with self._lock:
                self._threads.append(self._local.acc)
        return stack, self._local.acc

    def _enter(self, name: str) -> None:
        stack, acc = self._state()
        now, cnow = time.perf_counter(), time.thread_time()
        if stack:  # pause the enclosing phase
            top = stack[-1]
            a = acc[top[0]]
            a[0] += now - top[1]
            a[1] += cnow - top[2]
        stack.append([name, now, cnow])

    def _exit(self) -> None:
        stack, acc = self._local.stack, self._local.acc
        now, cnow = time.perf_counter(), time.thread_time()
        name, t, c = stack.pop()
        a = acc[name]
        a[0] += now - t
        a[1] += cnow - c
        if stack:  # resume the enclosing one
            stack[-1][1], stack[-1][2] = now, cnow

    @property
    def wall(self) -> dict[str, float]:
        with self._lock:
            return {n: sum(t[n][0] for t in self._threads) for n in self.NAMES}

    @property
    def cpu(self) -> dict[str, float]:
        with self._lock:
            return {n: sum(t[n][1] for t in self._threads) for n in self.NAMES}

    def timed(self, name: str, fn):
        import functools

        @functools.wraps(fn)
        def wrapper(*a, **kw):
            self._enter(name)
            try:
                return fn(*a, **kw)
            finally:
                self._exit()

        return wrapper

    def timed_cm(self, name: str, fn):
        """``fn`` returns a context manager: time the whole ``with`` block, its body included
        (a transaction's statements), as ``name``."""
        import contextlib

        phases = self

        @contextlib.contextmanager
        def wrapper(*a, **kw):
            phases._enter(name)
            try:
                with fn(*a, **kw) as value:
                    yield value
            finally:
                phases._exit()

        return wrapper

    def _patch(self, owner, attr: str, name: str, *, cm: bool = False) -> None:
        fn = getattr(owner, attr)
        self._undo.append((owner, attr, owner.__dict__[attr] if isinstance(owner, type) else fn))
        setattr(owner, attr, (self.timed_cm if cm else self.timed)(name, fn))

    def install(self, engine_cls) -> None:
        from fyan.executor import core, inputs, mirror, worker
        from fyan.sandbox import safefile
        from fyan.state import gateway, replica, store

        self._patch(gateway, "immediate_transaction", "state writes", cm=True)
        self._patch(replica, "immediate_transaction", "state writes", cm=True)
        self._patch(gateway.Gateway, "check_fence", "state writes")
        self._patch(store.Store, "_rows", "state reads")
        self._patch(gateway, "sha256_bytes", "hashing")
        self._patch(inputs, "inputs_digest", "hashing")
        self._patch(worker, "inputs_digest", "hashing")
        for attr in ("_stage_files", "_publish", "_unstage"):
            self._patch(gateway.Gateway, attr, "file I/O")
        self._patch(mirror.Mirror, "put_task", "file I/O")
        self._patch(worker, "_collect", "file I/O")
        self._patch(safefile, "read_bytes", "file I/O")
        for attr in ("encode_spec", "decode_result"):
            self._patch(core, attr, "dispatch")
        for attr in ("_dispatch", "_take"):
            self._patch(engine_cls, attr, "dispatch")
        self._patch(engine_cls, "_worker", "other")

    def uninstall(self) -> None:
        for owner, attr, fn in reversed(self._undo):
            setattr(owner, attr, fn)
        self._undo.clear()

    def report(self, transitions: int) -> list[str]:
        """Lines: each phase's thread time per transition (ms wall, ms CPU) and share."""
        wall, cpu = self.wall, self.cpu
        total_w = sum(v for k, v in wall.items() if k != "agents") or 1e-9
        lines = []
        for n in self.NAMES:
            w, c = wall[n], cpu[n]
            share = "" if n == "agents" else f"  {100 * w / total_w:4.0f}% of overhead"
            lines.append(f"  {n:<13} {1000 * w / transitions:7.2f} ms wall {1000 * c / transitions:7.2f} ms CPU{share}")
        tw = sum(v for k, v in wall.items() if k != "agents")
        tc = sum(v for k, v in cpu.items() if k != "agents")
        lines.append(f"  {'total':<13} {1000 * tw / transitions:7.2f} ms wall {1000 * tc / transitions:7.2f} ms CPU "
                     "(thread time summed over the loop and the worker threads, agents excluded)")
        return lines
