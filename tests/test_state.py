"""The store, the gateway (sole writer) and crash safety."""

from __future__ import annotations

import ast
import os
import re
import sqlite3
import subprocess
import sys

import pytest

from fyan.errors import TransitionError
from fyan.state.faults import FAULT_EXIT_CODE
from fyan.stages import stage_spec
from fyan.state.gateway import CheckOutcome, Gateway, sha256_bytes
from fyan.state.models import FailureKind, RunStatus, Stage
from fyan.state.store import Store
from tests.conftest import ROOT
from tests.helpers import ingested

ATTEMPTS = 3


def passing(ctx):
    return CheckOutcome(True, "ok (test check)")


ALL_PASS = {s: passing for s in Stage}


def produce(project, run, content: str = "x") -> None:
    """Write the stage's declared outputs into the attempt folder (what an agent does)."""
    for rel in stage_spec(run.stage).outputs:
        path = project.paths.root / run.attempt_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{rel} {content}\n")


def advance(project, gw, unit, stages=tuple(Stage)):
    for stage in stages:
        run = gw.begin(unit, stage, ATTEMPTS)
        produce(project, run)
        assert gw.finish(run).status is RunStatus.SUCCEEDED


def test_stages_run_in_order_and_dependencies_must_be_complete(tmp_path):
    project, gw = ingested(tmp_path, checks=ALL_PASS)
    with pytest.raises(TransitionError, match="cannot start prove: the next stage is reason"):
        gw.begin("def-a", Stage.PROVE, ATTEMPTS)
    with pytest.raises(TransitionError, match="dependencies not complete: lem-b"):
        gw.begin("thm-c", Stage.REASON, ATTEMPTS)
    advance(project, gw, "def-a", [Stage.REASON, Stage.PLAN])
    with pytest.raises(TransitionError, match="cannot start prove: the next stage is audit"):
        gw.begin("def-a", Stage.PROVE, ATTEMPTS)
    run = gw.begin("def-a", Stage.AUDIT, ATTEMPTS)
    with pytest.raises(TransitionError, match="audit is already running"):
        gw.begin("def-a", Stage.AUDIT, ATTEMPTS)
    produce(project, run)
    gw.finish(run)
    advance(project, gw, "def-a", [Stage.PROVE, Stage.GATE])
    with pytest.raises(TransitionError, match="already complete"):
        gw.begin("def-a", Stage.REASON, ATTEMPTS)
    advance(project, gw, "lem-b")
    gw.begin("thm-c", Stage.REASON, ATTEMPTS)  # now legal
    with pytest.raises(TransitionError, match="unknown unit"):
        gw.begin("nope", Stage.REASON, ATTEMPTS)


def test_finish_publishes_artifacts_with_hashes_and_refuses_double_finish(tmp_path):
    project, gw = ingested(tmp_path, checks=ALL_PASS)
    run = gw.begin("def-a", Stage.REASON, ATTEMPTS)
    produce(project, run, "v1")
    gw.finish(run)
    published = project.paths.unit("def-a") / "proof.md"
    assert published.read_text() == "proof.md v1\n"
    rec = gw.store.artifact("def-a", "proof.md")
    assert rec.sha256 == sha256_bytes(published.read_bytes()) and rec.run_id == run.id
    assert not any((project.paths.unit("def-a") / ".staging").iterdir())  # nothing left staged
    with pytest.raises(TransitionError, match="is not running"):
        gw.finish(run)


def test_failed_check_and_missing_output_do_not_advance(tmp_path):
    project, gw = ingested(tmp_path, checks={**ALL_PASS, Stage.REASON: lambda ctx: CheckOutcome(False, "too short")})
    run = gw.begin("def-a", Stage.REASON, ATTEMPTS)
    produce(project, run)
    done = gw.finish(run)
    assert done.status is RunStatus.FAILED and done.reason == "too short"
    assert not (project.paths.unit("def-a") / "proof.md").exists()  # nothing of a failed attempt is published
    run = gw.begin("def-a", Stage.REASON, ATTEMPTS)  # retry allowed
    done = gw.finish(run)  # no proof.md written
    assert done.reason == "attempt left no proof.md"
    run = gw.begin("def-a", Stage.REASON, ATTEMPTS)
    gw.finish(run, agent_error="model reply did not validate")
    view = gw.store.views(ATTEMPTS)["def-a"]
    assert view.status.value == "blocked" and "reason failed 3 time(s)" in view.reason
    with pytest.raises(TransitionError, match="blocked"):
        gw.begin("def-a", Stage.REASON, ATTEMPTS)


def test_a_crashing_check_fails_closed(tmp_path):
    def boom(ctx):
        raise RuntimeError("disk on fire")

    project, gw = ingested(tmp_path, checks={**ALL_PASS, Stage.REASON: boom})
    run = gw.begin("def-a", Stage.REASON, ATTEMPTS)
    produce(project, run)
    done = gw.finish(run)
    assert done.status is RunStatus.FAILED and "RuntimeError: disk on fire" in done.reason


def test_environment_failure_blocks_this_session_only(tmp_path):
    project, gw = ingested(tmp_path, checks={**ALL_PASS, Stage.REASON: lambda c: CheckOutcome(
        False, "Lean toolchain not found", failure_kind=FailureKind.ENVIRONMENT)})
    gw.start_session()
    run = gw.begin("def-a", Stage.REASON, ATTEMPTS)
    produce(project, run)
    gw.finish(run)
    assert gw.store.views(ATTEMPTS)["def-a"].status.value == "blocked"
    gw.start_session()  # a new `fyan run`
    assert gw.store.views(ATTEMPTS)["def-a"].status.value == "ready"


CRASH_SCRIPT = """
import sys
from pathlib import Path
from fyan.project import Project
from fyan.state.gateway import Gateway, CheckOutcome
from fyan.state.models import Stage
project = Project.open(sys.argv[1])
gw = Gateway(project, {Stage.REASON: lambda ctx: CheckOutcome(True, "ok")})
run = gw.begin("def-a", Stage.REASON, 3)
out = project.paths.root / run.attempt_dir / "proof.md"
out.write_text("new proof\\n")
gw.finish(run)
print("not reached")
"""


def crash_at(point: str, project) -> subprocess.CompletedProcess:
    env = {**os.environ, "FYAN_FAULT_AT": point, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", CRASH_SCRIPT, str(project.paths.root)], env=env,
                          capture_output=True, text=True, timeout=60)


def test_crash_between_artifact_copy_and_commit_leaves_previous_state(tmp_path):
    project, gw = ingested(tmp_path, checks=ALL_PASS)
    gw.close()
    proc = crash_at("finish:after_copy", project)
    assert proc.returncode == FAULT_EXIT_CODE, proc.stderr
    staged = project.paths.unit("def-a") / ".staging"
    assert [p.name for p in staged.iterdir()] == ["run-1.proof.md"]  # the copy happened, the commit did not
    gw = Gateway(project, ALL_PASS)
    interrupted = gw.recover()
    assert [r.stage for r in interrupted] == [Stage.REASON]
    assert gw.store.artifact("def-a", "proof.md") is None  # no orphan recorded as done
    assert not (project.paths.unit("def-a") / "proof.md").exists()
    assert not staged.exists()
    runs = gw.store.runs("def-a")
    assert [r.status for r in runs] == [RunStatus.INTERRUPTED]
    view = gw.store.views(ATTEMPTS)["def-a"]
    assert view.status.value == "ready" and view.next_stage is Stage.REASON  # re-run, not a failure


def test_crash_after_commit_is_rolled_forward(tmp_path):
    project, gw = ingested(tmp_path, checks=ALL_PASS)
    gw.close()
    proc = crash_at("finish:after_commit", project)
    assert proc.returncode == FAULT_EXIT_CODE, proc.stderr
    assert not (project.paths.unit("def-a") / "proof.md").exists()  # committed, not yet renamed
    gw = Gateway(project, ALL_PASS)
    assert gw.recover() == []
    assert (project.paths.unit("def-a") / "proof.md").read_text() == "new proof\n"
    assert gw.store.views(ATTEMPTS)["def-a"].next_stage is Stage.PLAN


def test_store_connections_are_read_only(tmp_path):
    project, gw = ingested(tmp_path, checks=ALL_PASS)
    store = Store(project.paths.db)
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        store._conn().execute("UPDATE stage_runs SET status = 'succeeded'")
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        store._conn().execute("INSERT INTO events (ts, kind, data) VALUES (0, 'forged', '{}')")


WRITE_SQL = re.compile(
    r"\b(INSERT\s+(OR\s+\w+\s+)?INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|REPLACE\s+INTO|CREATE\s+(TABLE|INDEX)|DROP\s+(TABLE|INDEX)|ALTER\s+TABLE)\b",
    re.IGNORECASE,
)


def test_only_the_gateway_writes_to_the_store():
    """Static check over the whole package: no module but the gateway opens a writable
    connection, executes SQL, or holds SQL that writes (store.py's SCHEMA is executed by the
    gateway). ``fyan/state/replica.py`` writes a worker's *copy* (never a project's store: it
    refuses one, see test_executor.py); ``fyan/prover/search.py`` writes the declaration index, a
    file of its own that it refuses to write over any other database
    (test_prover_search.py)."""
    offenders = []
    for path in sorted((ROOT / "fyan").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel in ("fyan/state/replica.py", "fyan/prover/search.py"):
            continue  # a worker's copy of the store; the prover's declaration index (its own file, which
            # build_index refuses to write over anything that is not a declaration index)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                name = node.func.attr
                if name == "connect" and rel != "fyan/state/gateway.py":
                    text = ast.unparse(node)
                    if "mode=ro" not in text:
                        offenders.append(f"{rel}:{node.lineno}: writable sqlite3.connect")
                if name in ("execute", "executemany", "executescript") and rel not in (
                    "fyan/state/gateway.py", "fyan/state/store.py"
                ):
                    offenders.append(f"{rel}:{node.lineno}: .{name}() outside the state layer")
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and WRITE_SQL.search(node.value):
                if rel == "fyan/state/gateway.py":
                    continue
                if rel == "fyan/state/store.py" and node.value.lstrip().startswith("CREATE TABLE IF NOT EXISTS meta"):
                    continue  # SCHEMA, executed only by Gateway.__init__
                offenders.append(f"{rel}:{node.lineno}: SQL write statement")
    assert offenders == []
