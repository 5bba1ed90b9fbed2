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

from fyan.state.gateway import STAGE_OUTPUTS, CheckOutcome  # noqa: E402
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
    for rel in STAGE_OUTPUTS[ctx.run.stage]:
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
