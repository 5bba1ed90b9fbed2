"""What the per-transition savings (the < 5 ms per transition target) must keep, and that they are made.

The orchestrator's own cost per transition (``scripts/bench_overhead.py``) is cut by doing once
per process what was done per transition: the gateway checks a unit's folder once (the check
resolves every path component), keeps the unit's staging folder, and a worker validates the
configuration snapshot and opens the mirror's ``Project`` once. These tests count the repeated
work (never time it) and check what must not change: a unit folder that is not where it should
be is still refused, a staging folder removed behind the gateway's back is made again, a
changed configuration reaches the next task, and a killed run leaves a state a restart
completes with every stage succeeding exactly once. Agents and checks are the test doubles of
``tests/test_orchestrator.py`` (they stand in for the model calls and the Lean toolchain).
"""

from __future__ import annotations

import shutil

import pytest

from fyan.errors import ProjectError
from fyan.executor import Executor
from fyan.executor import worker
from fyan.executor.core import LocalBackend
from fyan.executor.worker import Runtime
from fyan.project import ProjectPaths
from fyan.state.models import RunStatus, Stage
from tests.helpers import ingested
from tests.test_orchestrator import AGENTS, PASS, no_model
from tests.test_state import ATTEMPTS, produce


def _count_calls(monkeypatch, owner, name):
    calls = []
    fn = getattr(owner, name)

    def counting(*a, **kw):
        calls.append(a)
        return fn(*a, **kw)

    monkeypatch.setattr(owner, name, counting)
    return calls


def test_the_gateway_checks_a_unit_folder_once_not_per_transition(tmp_path, monkeypatch):
    """Before these savings, every finish checked ``units/<unit>`` three times (the gate's
    success, once per completion, adds the unit's module to the Lean package, which looks
    again: not counted here)."""
    project, gw = ingested(tmp_path, checks=PASS)
    calls = _count_calls(monkeypatch, ProjectPaths, "unit")
    for stage in (Stage.REASON, Stage.PLAN, Stage.AUDIT, Stage.PROVE):
        run = gw.begin("def-a", stage, ATTEMPTS)
        produce(project, run)
        assert gw.finish(run).status is RunStatus.SUCCEEDED
    assert [a[1] for a in calls if a[1] == "def-a"] == ["def-a"]
    assert (project.paths.unit("def-a") / "Basic.lean").is_file()


def test_a_unit_folder_that_resolves_elsewhere_is_still_refused(tmp_path):
    project, gw = ingested(tmp_path, checks=PASS)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    unit_dir = project.paths.unit("def-a")
    shutil.rmtree(unit_dir)
    unit_dir.symlink_to(elsewhere)
    run = gw.begin("def-a", Stage.REASON, ATTEMPTS)
    produce(project, run)
    with pytest.raises(ProjectError, match="would leave"):
        gw.finish(run)
    assert not list(elsewhere.iterdir())  # nothing was written through the link


def test_a_staging_folder_removed_between_transitions_is_made_again(tmp_path):
    project, gw = ingested(tmp_path, checks=PASS)
    for stage in (Stage.REASON, Stage.PLAN):
        run = gw.begin("def-a", stage, ATTEMPTS)
        produce(project, run)
        assert gw.finish(run).status is RunStatus.SUCCEEDED
        shutil.rmtree(project.paths.unit("def-a") / ".staging")  # another tidy-up, a person
    assert (project.paths.unit("def-a") / "Statement.lean").is_file()
    gw.tidy()
    run = gw.begin("def-a", Stage.AUDIT, ATTEMPTS)
    produce(project, run)
    assert gw.finish(run).status is RunStatus.SUCCEEDED
    assert (project.paths.unit("def-a") / "audit" / "record.json").is_file()


def _executor(tmp_path):
    project, gw = ingested(tmp_path / "p", checks=PASS, extra_toml="[agents]\npost_completion = false\n")
    gw.start_session()
    return project, gw, Executor(project, gw, LocalBackend(project, Runtime(agents=AGENTS, providers=no_model)))


def test_a_worker_reads_the_configuration_once_per_snapshot(tmp_path, monkeypatch):
    """Before these savings every task validated the snapshot again (one call per task)."""
    import fyan.config

    monkeypatch.setattr(worker, "_configs", {})
    monkeypatch.setattr(worker, "_projects", {})
    calls = _count_calls(monkeypatch, fyan.config, "config_from_snapshot")
    project, gw, executor = _executor(tmp_path)
    seen = []
    for stage in (Stage.REASON, Stage.PLAN):
        run = gw.begin("def-a", stage, ATTEMPTS, create_dir=False)
        assert executor.attempt(run).status is RunStatus.SUCCEEDED
        seen.append(worker._configs[executor.backend.site][1])
    assert len(calls) == 1 and seen[0] is seen[1]
    # a changed configuration (an edited fyan.toml) reaches the next task
    project.config.scheduler.attempts_per_stage = 7
    executor.inputs._config = fyan.config.config_snapshot(project.config)
    run = gw.begin("def-a", Stage.AUDIT, ATTEMPTS, create_dir=False)
    assert executor.attempt(run).status is RunStatus.SUCCEEDED
    assert len(calls) == 2
    assert worker._configs[executor.backend.site][1].scheduler.attempts_per_stage == 7


def test_two_sites_keep_their_own_lake(tmp_path):
    from fyan.executor.mirror import Site

    project, _, executor = _executor(tmp_path)
    snapshot = executor.inputs._config
    a = worker._config_for(Site(base=tmp_path / "a", lake="/opt/a/lake", name="a"), snapshot)
    b = worker._config_for(Site(base=tmp_path / "b", lake="/opt/b/lake", name="b"), snapshot)
    assert (a.lean.lake, b.lean.lake) == ("/opt/a/lake", "/opt/b/lake")
    assert worker._config_for(Site(base=tmp_path / "a", lake="/opt/a/lake", name="a"), snapshot) is a


RUN_SCRIPT = """
import sys
from fyan.orchestrator.engine import Engine
from fyan.project import Project
from fyan.state.gateway import Gateway
from tests.test_orchestrator import AGENTS, PASS, no_model
project = Project.open(sys.argv[1])
gw = Gateway(project, PASS)
Engine(project, gw, agents=AGENTS, providers=no_model, parallelism=2).run()
print("not reached")
"""


@pytest.mark.parametrize("point", ["finish:after_copy@4", "finish:after_commit@5", "attempt:before_finish@3"])
def test_a_run_killed_mid_transition_resumes_with_every_stage_done_once(tmp_path, point):
    """A run dies (``os._exit``, like SIGKILL) at a transition's crash-critical moment with the
    gateway's remembered folders in the dead process; the restarted run recovers and completes
    every unit, each stage succeeding exactly once, every artifact on disk with its hash."""
    import os
    import subprocess
    import sys
    from collections import Counter

    from fyan.orchestrator.engine import Engine
    from fyan.state.faults import FAULT_EXIT_CODE
    from fyan.state.gateway import Gateway, sha256_file
    from tests.conftest import ROOT

    project, gw = ingested(tmp_path, checks=PASS, extra_toml="[agents]\npost_completion = false\n")
    gw.close()
    env = {**os.environ, "FYAN_FAULT_AT": point, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", RUN_SCRIPT, str(project.paths.root)], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == FAULT_EXIT_CODE, proc.stderr
    gw = Gateway(project, PASS)
    summary = Engine(project, gw, agents=AGENTS, providers=no_model, parallelism=2).run()
    assert summary.counts.get("complete") == summary.units
    succeeded = Counter((r.unit, r.stage) for r in gw.store.runs() if r.status is RunStatus.SUCCEEDED)
    assert set(succeeded.values()) == {1} and len(succeeded) == summary.units * len(Stage)
    for a in gw.store.artifacts():
        assert sha256_file(project.paths.root / a.path) == a.sha256, a.path
    gw.close()


def _record(uid: str, order: int):
    from fyan.state.models import UnitRecord

    return UnitRecord(id=uid, order=order, kind="theorem", module=uid.upper(), layer=0, statements=[order],
                      provenance="doc.tex:1-1")


def test_the_ledger_orders_dependencies_first_and_ready_units_in_document_order():
    """The ledger's order (graphlib, not networkx, whose import alone cost a restart ~60 ms) puts every dependency before its
    dependents — also when the document states a unit before a lemma it uses — and breaks ties
    among units that become ready together by document order, the same order every time."""
    from fyan.orchestrator.ledger import Ledger

    units = [_record("t1", 0), _record("l2", 1), _record("a", 2), _record("b", 3), _record("c", 4)]
    edges = [("t1", "l2"), ("t1", "c"), ("b", "a")]  # t1 uses a later lemma l2 and c; b uses a
    for _ in range(3):
        ledger = Ledger(list(reversed(units)), edges, [], 3)
        assert ledger.topo == ["l2", "a", "c", "t1", "b"]
        pos = {u: i for i, u in enumerate(ledger.topo)}
        assert all(pos[d] < pos[u] for u, d in edges)


def test_a_cyclic_store_fails_loudly_in_the_ledger_and_the_views():
    """A cycle cannot pass the intake; a store edited by hand to have one is refused by name
    (``graphlib.CycleError``), never ordered silently."""
    from graphlib import CycleError

    from fyan.orchestrator.ledger import Ledger
    from fyan.state.lifecycle import unit_views
    from fyan.state.models import DependencyRecord

    units = [_record("a", 0), _record("b", 1)]
    with pytest.raises(CycleError):
        Ledger(units, [("a", "b"), ("b", "a")], [], 3)
    deps = [DependencyRecord(unit="a", depends_on="b", origin="declared", in_proof=False, evidence=""),
            DependencyRecord(unit="b", depends_on="a", origin="declared", in_proof=False, evidence="")]
    with pytest.raises(CycleError):
        unit_views(units, deps, [], 3)


def test_the_restart_path_does_not_import_networkx():
    """What a restart imports before its first dispatch (the daemon, the gateway, the ledger)
    leaves networkx out: its import alone was ~60 ms of the restart."""
    import subprocess
    import sys

    from tests.conftest import ROOT

    code = ("import sys; from fyan.daemon import Daemon; from fyan.orchestrator.ledger import Ledger; "
            "from fyan.state.gateway import Gateway; from fyan.lakepackage import package; print('networkx' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_the_overhead_bench_prints_both_methods_side_by_side(tmp_path):
    """``scripts/bench_overhead.py`` runs (a small DAG) and prints, from one invocation, the run
    with nothing added against the target and the timed run's breakdown by phase."""
    import subprocess
    import sys

    from tests.conftest import ROOT

    out = subprocess.run([sys.executable, "scripts/bench_overhead.py", "--units", "12", "--repeat", "1",
                          "--dir", str(tmp_path)],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    text = out.stdout
    assert "run with nothing added (turn-2's method), 1 run(s):" in text
    assert "run with the phase timers, 1 run(s):" in text
    assert text.count("per-transition overhead (turn-2's method):") == 2
    assert text.count("complete 12/12 in every run, ledger agrees with store: True") == 2
    for phase in ("state writes", "state reads", "file I/O", "dispatch", "other"):
        assert phase in text


FOUR_LEMMAS = "\n".join(rf"\begin{{lemma}}\label{{lem:{c}}} The number ${i}$ is an integer.\end{{lemma}}"
                        for i, c in enumerate("abcd"))


def test_agents_run_in_parallel_outside_the_bookkeeping_lock(tmp_path):
    """The bookkeeping lock (``fyan.executor.bookkeeping``) never covers an agent: four
    independent units' first stages meet at a four-party barrier inside their agents. Were the
    lock held across an agent run, the barrier would never fill and every attempt would fail
    (the barrier breaks after 20 s); and no agent ever sees the lock held by its own thread."""
    import threading

    from fyan.executor.bookkeeping import BOOKKEEPING
    from fyan.orchestrator.engine import Engine
    from tests.test_orchestrator import write_outputs

    barrier = threading.Barrier(4, timeout=20)
    held: list[bool] = []

    def meeting(session, ctx):
        held.append(BOOKKEEPING._is_owned())
        if ctx.run.stage is Stage.REASON:
            barrier.wait()
        write_outputs(session, ctx)

    project, gw = ingested(tmp_path, tex=FOUR_LEMMAS, checks=PASS, extra_toml="[agents]\npost_completion = false\n")
    summary = Engine(project, gw, agents={s: meeting for s in Stage}, providers=no_model, parallelism=4).run()
    assert summary.units == 4 and summary.counts.get("complete") == 4
    assert held and not any(held)
    gw.close()


def test_the_bookkeeping_of_attempts_is_never_interleaved(tmp_path, monkeypatch):
    """While one thread opens an attempt, builds its inputs or takes its result in, no other
    thread does any of these (four attempts at a time): the sections are serialized, which is
    what cuts the GIL hand-offs."""
    import threading
    import time

    from fyan.executor.inputs import InputBuilder
    from fyan.executor.mirror import Mirror
    from fyan.orchestrator.engine import Engine
    from fyan.state.gateway import Gateway

    inside = [0]
    most = [0]
    lock = threading.Lock()

    def counted(owner, name):
        fn = getattr(owner, name)

        def wrapper(*a, **kw):
            with lock:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
            try:
                time.sleep(0.002)  # widen the window: an unserialized section would overlap here
                return fn(*a, **kw)
            finally:
                with lock:
                    inside[0] -= 1

        monkeypatch.setattr(owner, name, wrapper)

    counted(Gateway, "begin")
    counted(InputBuilder, "spec")
    counted(Mirror, "_put_own")
    counted(worker, "_collect")
    counted(Gateway, "record_model_calls")  # in Executor.collect's part; the check (finish) is outside
    project, gw = ingested(tmp_path, tex=FOUR_LEMMAS, checks=PASS, extra_toml="[agents]\npost_completion = false\n")
    summary = Engine(project, gw, agents=AGENTS, providers=no_model, parallelism=4).run()
    assert summary.counts.get("complete") == 4
    assert most[0] == 1
    gw.close()
