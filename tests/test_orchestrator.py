"""The run loop's ledger and scheduler, crash-safe resume, and clean stops.

Agents and checks here are test doubles that stand in for the model calls and the Lean
toolchain: they write each stage's declared outputs and pass (or fail) at once.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter

import pytest

from fyan.cli import main
from fyan.errors import FyanError, ProjectError
from fyan.daemon import Daemon, DaemonOptions
from fyan.orchestrator.engine import Engine
from fyan.orchestrator.ledger import Ledger
from fyan.orchestrator.scheduler import Scheduler, priorities
from fyan.state.faults import FAULT_EXIT_CODE
from fyan.stages import stage_spec
from fyan.state.gateway import CheckOutcome, sha256_file
from fyan.state.models import RunStatus, Stage, StageRun, UnitRecord
from fyan.state.store import Store
from tests.conftest import ROOT
from tests.helpers import ingested, make_project


def write_outputs(session, ctx) -> None:
    for rel in stage_spec(ctx.run.stage).outputs:
        ctx.write(rel, f"{rel} of {ctx.unit.id}\n")


AGENTS = {s: write_outputs for s in Stage}
PASS = {s: (lambda ctx: CheckOutcome(True, "ok (test double)")) for s in Stage}


def no_model(stage):
    return None


def test_ledger_follows_the_store_and_schedules_the_longest_chain_first(tmp_path):
    # a -> b -> c is a chain; d stands alone: with one slot, the chain's head goes first
    tex = ("\\begin{lemma}\\label{a} A. \\end{lemma}\n\\begin{lemma}\\label{d} D. \\end{lemma}\n"
           "\\begin{lemma}\\label{b} By \\ref{a}. \\end{lemma}\n\\begin{lemma}\\label{c} By \\ref{b}. \\end{lemma}\n")
    project, gw = ingested(tmp_path, tex=tex, checks=PASS, extra_toml="[intake]\nterm_edges = false\n")
    ledger = Ledger.load(gw.store, 3)
    assert sorted(ledger.ready) == ["a", "d"]
    prio = priorities(ledger)
    assert prio["a"] == pytest.approx(15.0) and prio["d"] == pytest.approx(5.0)  # stages x 1 s default
    assert Scheduler(ledger).order(["d", "a"]) == ["a", "d"]
    assert Scheduler(ledger, "fifo").order(["d", "a"]) == ["d", "a"]
    order = []
    engine = Engine(project, gw, agents=AGENTS, providers=no_model, parallelism=1,
                    on_event=lambda e, v: order.append(e.unit) if e.status == "started" else None)
    summary = engine.run()
    assert summary.counts == {"complete": 4}
    assert order[:5] == ["a"] * 5  # the head of the longest chain ran first
    assert engine.ledger.verify(gw.store) == []  # the in-memory state agrees with the store


def test_recorded_durations_drive_the_estimates(tmp_path):
    units = [UnitRecord(id=u, order=i, kind="lemma", module=u.upper(), layer=0, statements=[i], provenance="f:1-1")
             for i, u in enumerate("xy")]
    runs = [StageRun(id=1, unit="x", stage=Stage.REASON, attempt=1, status=RunStatus.SUCCEEDED, started_at=0,
                     finished_at=30, attempt_dir="-"),
            StageRun(id=2, unit="y", stage=Stage.REASON, attempt=1, status=RunStatus.FAILED, started_at=0,
                     finished_at=10, attempt_dir="-", reason="no")]
    ledger = Ledger(units, [], runs, 3)
    assert ledger.stage_cost("y", Stage.REASON) == 10  # its own last attempt
    assert ledger.stage_cost("z", Stage.REASON) == 20  # the median of the stage
    assert ledger.stage_cost("x", Stage.PLAN) == 1.0  # never recorded: the default
    assert ledger.remaining_costs()["y"] == ledger.remaining_cost("y") == 10 + 4 * 1.0


CHILD = """
import sys
from fyan.daemon import Daemon, DaemonOptions
from fyan.state.faults import fault_point
from fyan.stages import stage_spec
from fyan.state.gateway import CheckOutcome
from fyan.state.models import Stage

def agent(session, ctx):
    outputs = stage_spec(ctx.run.stage).outputs
    for i, rel in enumerate(outputs):
        ctx.write(rel, f"{rel} of {ctx.unit.id}\\n")
        if i == 0:
            fault_point("test:agent_running")   # the process dies while the agent works
    if not outputs:
        fault_point("test:agent_running")

checks = {s: (lambda ctx: CheckOutcome(True, "ok")) for s in Stage}
options = DaemonOptions(watch=False, until_idle=True, parallelism=1, engine_kwargs=dict(
    agents={s: agent for s in Stage}, providers=lambda s: None, checks=checks, critic=None))
summary = Daemon(sys.argv[1], options).serve()
print(summary.counts)
"""


def run_child(project, fault: str | None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "FYAN_FAULT_AT"}
    env["PYTHONPATH"] = str(ROOT)
    if fault:
        env["FYAN_FAULT_AT"] = fault
    return subprocess.run([sys.executable, "-c", CHILD, str(project.paths.root)], env=env, capture_output=True,
                          text=True, timeout=120)


def finished(store: Store) -> dict[int, tuple]:
    return {r.id: (r.unit, r.stage.value, r.status.value) for r in store.runs() if r.status is not RunStatus.RUNNING}


@pytest.mark.parametrize("fault,interrupted", [
    ("finish:after_copy@7", 1),  # killed after the artifacts were staged, before the commit
    ("finish:after_commit@7", 0),  # killed after the commit, before the files were put in place
    ("test:agent_running@7", 1),  # killed while an agent was writing its files
])
def test_resume_after_a_kill_loses_nothing_and_redoes_nothing(tmp_path, fault, interrupted):
    project = make_project(tmp_path / "p")
    proc = run_child(project, fault)
    assert proc.returncode == FAULT_EXIT_CODE, proc.stderr
    store = Store(project.paths.db)
    before = finished(store)
    running = [r for r in store.runs() if r.status is RunStatus.RUNNING]
    assert len(running) == interrupted and len(before) == 7 - interrupted
    store.close()
    # the dry run explains, and writes nothing
    db_before = hashlib.sha256(project.paths.db.read_bytes()).hexdigest()
    assert main(["resume", str(project.paths.root), "--dry-run", "--json"]) == 0
    assert hashlib.sha256(project.paths.db.read_bytes()).hexdigest() == db_before
    proc = run_child(project, None)
    assert proc.returncode == 0, proc.stderr
    store = Store(project.paths.db)
    after = finished(store)
    assert {k: after[k] for k in before} == before  # 0 lost: every committed transition is still there
    succeeded = Counter((u, s) for u, s, st in after.values() if st == "succeeded")
    assert set(succeeded.values()) == {1} and len(succeeded) == 15  # 0 duplicated: each stage once
    assert Counter(st for _, _, st in after.values())["interrupted"] == interrupted  # recorded, then re-run
    for a in store.artifacts():  # every recorded artifact is on disk with its hash (rolled forward)
        assert sha256_file(project.paths.root / a.path) == a.sha256, a.path
    assert {v.status.value for v in store.views(3).values()} == {"complete"}
    assert not any(p.is_file() for p in project.paths.units.rglob(".staging/*"))


def test_resume_dry_run_explains_an_interrupted_attempt(tmp_path, capsys):
    project = make_project(tmp_path / "p")
    assert run_child(project, "test:agent_running@2").returncode == FAULT_EXIT_CODE
    assert main(["resume", str(project.paths.root), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "1 attempt(s) were running when the last process stopped" in out
    assert "def-a (plan, run 2)" in out and "recorded as interrupted (not failures) and run again" in out
    assert "first attempts (highest remaining critical path first): def-a (plan)" in out


def test_stop_records_running_attempts_as_interrupted_and_resume_continues(tmp_path):
    project = make_project(tmp_path / "p")
    release = threading.Event()
    entered = threading.Event()

    def slow(session, ctx):
        if ctx.unit.id == "lem-b" and ctx.run.stage is Stage.PLAN:
            entered.set()
            release.wait(30)  # a long model call
        write_outputs(session, ctx)

    options = DaemonOptions(watch=False, until_idle=True, parallelism=2, engine_kwargs=dict(
        agents={s: slow for s in Stage}, providers=no_model, checks=PASS, critic=None))
    daemon = Daemon(project.paths.root, options)
    result = {}
    t = threading.Thread(target=lambda: result.setdefault("summary", daemon.serve()))
    t.start()
    assert entered.wait(30)
    daemon.engine.stop("stopped by SIGTERM")
    t.join(30)
    release.set()
    assert not t.is_alive() and result["summary"].stopped == "stopped by SIGTERM"
    store = Store(project.paths.db)
    run = [r for r in store.runs("lem-b") if r.stage is Stage.PLAN][-1]
    assert run.status is RunStatus.INTERRUPTED and run.reason == "interrupted: stopped by SIGTERM"
    time.sleep(0.2)  # the abandoned worker wakes up; its late finish must be refused
    assert [r for r in store.runs("lem-b") if r.stage is Stage.PLAN][-1].status is RunStatus.INTERRUPTED
    options.engine_kwargs["agents"] = AGENTS
    summary = Daemon(project.paths.root, options).serve()
    assert summary.counts == {"complete": 3}
    plans = [r.status.value for r in store.runs("lem-b") if r.stage is Stage.PLAN]
    assert plans == ["interrupted", "succeeded"]


def test_sigterm_stops_the_foreground_run_cleanly(tmp_path):
    project = make_project(tmp_path / "p")
    script = CHILD.replace("agent(session, ctx):", "agent(session, ctx):\n    import time; time.sleep(60)", 1)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("FYAN_FAULT_AT", None)
    proc = subprocess.Popen([sys.executable, "-c", script, str(project.paths.root)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if any(r.status is RunStatus.RUNNING for r in Store(project.paths.db).runs()):
                break
        except (sqlite3.OperationalError, ProjectError):
            pass  # not created yet
        time.sleep(0.1)
    proc.terminate()
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    runs = Store(project.paths.db).runs()
    assert [(r.stage.value, r.status.value) for r in runs] == [("reason", "interrupted")]
    assert runs[0].reason == "interrupted: stopped by SIGTERM"
    assert json.loads(json.dumps(out)).strip() == "{'ready': 1, 'waiting': 2}"


def test_run_restricted_to_a_unit_and_its_dependencies(tmp_path):
    project, gw = ingested(tmp_path, checks=PASS)
    summary = Engine(project, gw, agents=AGENTS, providers=no_model, only={"lem-b"}).run()
    assert summary.counts == {"complete": 2, "ready": 1}
    assert {r.unit for r in gw.store.runs()} == {"def-a", "lem-b"}
    with pytest.raises(FyanError, match="unknown unit"):
        Engine(project, gw, agents=AGENTS, providers=no_model, only={"nope"}).run()
