"""Dispatch cost flat in project size: the scheduler's queue and the Lean package's
root module are updated incrementally, with the same results as the full computations.

The timing itself is measured by ``scripts/bench_overhead.py`` (never asserted here)."""

from __future__ import annotations

import random

from fyan.lakepackage.package import add_unit_module, init_package, sync_package
from fyan.orchestrator.ledger import Ledger
from fyan.orchestrator.scheduler import Scheduler
from fyan.state.models import RunStatus, Stage, StageRun, UnitRecord
from tests.helpers import make_project


def _ledger(n: int, seed: int) -> Ledger:
    rng = random.Random(seed)
    units = [UnitRecord(id=f"u{i}", order=i, kind="lemma", module=f"U{i}", layer=0, statements=[i], provenance="f:1-1")
             for i in range(n)]
    edges = [(f"u{i}", f"u{j}") for i in range(n) for j in range(max(0, i - 8), i) if rng.random() < 0.2]
    runs = []
    rid = 0
    for i in range(n):  # some units already have history, so the priorities differ
        for stage in list(Stage)[: rng.randint(0, 2)]:
            rid += 1
            runs.append(StageRun(id=rid, unit=f"u{i}", stage=stage, attempt=1, status=RunStatus.SUCCEEDED,
                                 started_at=0, finished_at=rng.uniform(1, 30), attempt_dir="-"))
    return Ledger(units, edges, runs, 3)


def test_pick_hands_out_units_in_the_order_of_a_full_sort():
    for policy in ("critical-path", "fifo"):
        ledger = _ledger(60, seed=3)
        full = Scheduler(ledger, policy).order(sorted(ledger.ready, key=lambda u: ledger.units[u].order))  # type: ignore[arg-type]
        picked = Scheduler(ledger, policy).pick(len(full), lambda u: True)  # type: ignore[arg-type]
        assert picked == full, policy
        assert len(picked) > 5


def test_pick_keeps_refused_units_queued_and_drops_skipped_ones_until_the_refresh():
    ledger = _ledger(60, seed=5)
    sched = Scheduler(ledger)
    order = sched.order(sorted(ledger.ready))
    first, second, third = order[:3]
    # the best unit has no slot now (False): it stays queued; the second is skipped (None)
    got = sched.pick(1, lambda u: False if u == first else (None if u == second else True))
    assert got == [third]
    assert sched.pick(1, lambda u: True) == [first]  # still queued, and still first
    assert second not in sched.pick(len(order), lambda u: True)  # skipped until the queue is rebuilt


def test_a_unit_that_becomes_ready_again_is_picked_again():
    ledger = _ledger(10, seed=1)
    sched = Scheduler(ledger)
    uid = sched.pick(1, lambda u: True)[0]
    assert uid not in sched.pick(100, lambda u: True)  # handed out once
    stage = ledger.views[uid].next_stage
    run = StageRun(id=10_000, unit=uid, stage=stage, attempt=1, status=RunStatus.RUNNING, started_at=0, attempt_dir="-")
    ledger.record(run)
    assert uid not in ledger.ready
    ledger.record(run.model_copy(update={"status": RunStatus.SUCCEEDED, "finished_at": 1.0}))
    assert uid in ledger.ready and uid in sched.pick(100, lambda u: True)


def test_incremental_root_module_equals_the_full_sync(tmp_path):
    project = make_project(tmp_path / "p")
    init_package(project)
    lib = project.config.lean_lib
    units = [UnitRecord(id=f"u{i}", order=i, kind="lemma", module=f"U{i}", layer=0, statements=[i], provenance="f:1-1")
             for i in range(5)]
    for u in units:
        path = project.paths.unit(u.id) / "Basic.lean"
        path.parent.mkdir(parents=True)
        path.write_text(f"-- {u.id}\n")
    root = project.paths.lean / f"{lib}.lean"
    for u in units[:3]:
        add_unit_module(project, u)
    add_unit_module(project, units[1])  # already imported: unchanged
    incremental = root.read_text()
    assert incremental.count("\nimport ") == 3

    class _Complete:
        exists = True

    sync_package(project, _Complete(), complete=units[:3])  # type: ignore[arg-type]
    assert root.read_text() == incremental
    # a root module rewritten behind the cache's back (same process) is re-read, not trusted
    sync_package(project, _Complete(), complete=[units[0]])  # type: ignore[arg-type]
    add_unit_module(project, units[4])
    assert [line for line in root.read_text().splitlines() if line.startswith("import")] == [
        f"import {lib}.U0.Basic", f"import {lib}.U4.Basic"]


def test_a_task_payload_does_not_grow_with_the_project(tmp_path):
    """What a task carries depends on its unit and direct dependencies, not on how many units
    the project has (the intake catalogue in every task's meta rows made it grow)."""
    from fyan.executor.core import Executor, LocalBackend
    from fyan.executor.payload import encode_spec
    from fyan.state.gateway import CheckOutcome, Gateway
    from fyan.specifier.ingest import ingest
    from fyan.state.models import Stage

    sizes = []
    for n in (10, 200):
        tex = "".join(f"\\begin{{lemma}}\\label{{l{i}}} Statement {i}.\\end{{lemma}}\n" for i in range(n))
        project = make_project(tmp_path / f"p{n}", tex, "[intake]\nterm_edges = false\n")
        gw = Gateway(project, {s: (lambda ctx: CheckOutcome(True, "ok")) for s in Stage})
        ingest(project, gw)
        gw.start_session()
        executor = Executor(project, gw, LocalBackend(project, None))
        run = gw.begin("l0", Stage.REASON, 3, create_dir=False)
        sizes.append(len(encode_spec(executor.inputs.spec(run, "attempt", gw.head_token))))
        gw.close()
    assert abs(sizes[1] - sizes[0]) < 64, sizes
