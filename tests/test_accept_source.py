"""Accepting a change of the source (``fyan accept-source``): the way forward for stale units.

A changed statement makes its unit and the units depending on it stale: held, never re-run on
their own. ``fyan status`` and ``fyan resume --dry-run`` name the command that accepts the
change; ``--dry-run`` says what it would re-run and writes nothing; accepting rewrites the
changed units' intake files, makes the stale units start over from their first stage (a
restart marker in their history: ``fyan.state.lifecycle``) and leaves every other unit's work
as it was. A change that adds or removes units or changes their dependencies is refused with
what changed named. Agents and checks are doubles (they stand in for the models and Lean).
"""

from __future__ import annotations

import json

import pytest

from fyan.cli import main
from fyan.orchestrator import staleness
from fyan.daemon import Daemon, DaemonOptions
from fyan.stages import stage_spec
from fyan.state.gateway import CheckOutcome
from fyan.state.lifecycle import progress
from fyan.state.models import FailureKind, RunStatus, Stage, StageRun
from fyan.state.store import Store
from tests.helpers import make_project

CHANGED = "Every nice integer is even."


def _agent(session, ctx):
    for rel in stage_spec(ctx.run.stage).outputs:
        ctx.write(rel, f"{rel} of {ctx.unit.id}\n")


def _serve(root):
    checks = {s: (lambda ctx: CheckOutcome(True, "ok (test double)")) for s in Stage}
    daemon = Daemon(root, DaemonOptions(watch=False, until_idle=True, engine_kwargs=dict(
        agents={s: _agent for s in Stage}, providers=lambda s: None, checks=checks, critic=None)))
    daemon.summary = daemon.serve()
    return daemon


@pytest.fixture
def done(tmp_path):
    """The three-unit chain (def-a ← lem-b ← thm-c) run to completion."""
    project = make_project(tmp_path / "p")
    _serve(project.paths.root)
    store = Store(project.paths.db)
    assert {u: v.status.value for u, v in store.views(3).items()} == {
        "def-a": "complete", "lem-b": "complete", "thm-c": "complete"}
    store.close()
    return project


def _edit(project, old: str, new: str) -> None:
    src = project.paths.source / "doc.tex"
    src.write_text(src.read_text().replace(old, new))


def _snapshot(project) -> dict[str, bytes]:
    root = project.paths.root
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and ".fyan" not in p.parts}


def test_status_and_resume_name_the_command_and_the_dry_run_changes_nothing(done, capsys):
    project = done
    root = str(project.paths.root)
    _edit(project, CHANGED, "Every nice integer is odd.")
    assert main(["status", root]) == 0
    out = capsys.readouterr().out
    assert "2 unit(s) are stale and held (not re-run until the change is accepted)" in out
    assert f"To accept the change and re-run what it touches: fyan accept-source {root}" in out
    assert "`--dry-run` first shows what it would re-run" in out
    assert main(["resume", root, "--dry-run"]) == 0
    assert f"fyan accept-source {root}" in capsys.readouterr().out
    before, db = _snapshot(project), project.paths.db.read_bytes()
    assert main(["accept-source", root, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "accepting the source change would re-run 2 unit(s) from their first stage" in out
    assert "  lem-b: its statement changed in the source" in out
    assert "and 1 unit(s) that depend on them: thm-c" in out
    assert "2 of them are complete now; their completion is withdrawn" in out
    assert f"Accept it with: fyan accept-source {root}" in out
    assert _snapshot(project) == before and project.paths.db.read_bytes() == db
    assert main(["accept-source", root, "--dry-run", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["restart"] == ["lem-b", "thm-c"] and payload["changed"] == {
        "lem-b": "its statement changed in the source"} and payload["dry_run"] is True


def test_accepting_restarts_what_the_change_touches_and_keeps_the_rest(done, capsys):
    project = done
    root = str(project.paths.root)
    store = Store(project.paths.db)
    a_runs = [r.id for r in store.runs("def-a")]
    a_problem = (project.paths.unit("def-a") / "problem.tex").read_bytes()
    _edit(project, CHANGED, "Every nice integer is odd.")
    assert main(["accept-source", root]) == 0
    out = capsys.readouterr().out
    assert "re-runs 2 unit(s) from their first stage" in out and f"Next: fyan run {root}" in out
    views = store.views(3)
    assert {u: v.status.value for u, v in views.items()} == {
        "def-a": "complete", "lem-b": "ready", "thm-c": "waiting"}
    assert views["lem-b"].next_stage is Stage.REASON and views["lem-b"].attempts == {}
    # the changed unit's statement is the new one; the untouched unit's files and runs are as they were
    assert "Every nice integer is odd." in (project.paths.unit("lem-b") / "problem.tex").read_text()
    assert (project.paths.unit("def-a") / "problem.tex").read_bytes() == a_problem
    assert [r.id for r in store.runs("def-a")] == a_runs
    marker = store.runs("lem-b")[-1]
    assert marker.status is RunStatus.INTERRUPTED and marker.failure_kind is FailureKind.RESTART
    assert staleness.check(project, store).stale == {}  # nothing is stale any more
    assert [e for e in store.events() if e.kind == "source_accepted"][-1].data["restarted"] == ["lem-b", "thm-c"]
    # the next run takes them through every stage again
    _serve(project.paths.root)
    assert {u: v.status.value for u, v in store.views(3).items()} == {
        "def-a": "complete", "lem-b": "complete", "thm-c": "complete"}
    assert [r.stage for r in store.runs("lem-b")][-5:] == list(Stage)
    assert [r.id for r in store.runs("def-a")] == a_runs
    # accepting again: nothing to do
    assert main(["accept-source", root]) == 0
    assert "the source has not changed since intake; nothing to accept" in capsys.readouterr().out
    store.close()


@pytest.mark.parametrize("old, new, what", [
    ("\\end{theorem}\n", "\\end{theorem}\n\\begin{lemma}\\label{lem:d} 6 is even. \\end{lemma}\n",
     "1 new unit(s) in the source: lem-d"),
    ("\\begin{theorem}\\label{thm:c} By Lemma~\\ref{lem:b}, 4 is even. \\end{theorem}\n", "",
     "1 unit(s) no longer in the source: thm-c"),
    ("By Lemma~\\ref{lem:b}, 4 is even.", "4 is even.", "dependency change(s): thm-c → no longer uses lem-b"),
])
def test_a_change_of_the_units_or_their_dependencies_is_refused_and_changes_nothing(done, capsys, old, new, what):
    project = done
    root = str(project.paths.root)
    _edit(project, old, new)
    before, db = _snapshot(project), project.paths.db.read_bytes()
    for extra in ([], ["--dry-run"]):
        assert main(["accept-source", root, *extra]) == 4
        err = capsys.readouterr().err
        assert "this source change cannot be accepted in place" in err and what in err
        assert "fyan init NEW --source" in err
    assert _snapshot(project) == before and project.paths.db.read_bytes() == db


def test_a_restart_marker_starts_the_unit_over():
    """The lifecycle rule: runs before the marker no longer count (complete, failures, budget)."""
    def run(i, stage, status, kind=None):
        return StageRun(id=i, unit="u", stage=stage, attempt=1, status=status, started_at=i, finished_at=i,
                        failure_kind=kind, attempt_dir="")

    done = [run(i + 1, s, RunStatus.SUCCEEDED) for i, s in enumerate(Stage)]
    assert progress(done, 3).complete
    marker = run(9, Stage.REASON, RunStatus.INTERRUPTED, FailureKind.RESTART)
    p = progress([*done, marker], 3)
    assert not p.complete and p.next_stage is Stage.REASON and p.blocked_reason is None and not p.attempts
    failed = [run(i, Stage.REASON, RunStatus.FAILED, FailureKind.CHECK) for i in (1, 2, 3)]
    assert progress(failed, 3).blocked_reason is not None  # out of attempts...
    p = progress([*failed, run(4, Stage.REASON, RunStatus.INTERRUPTED, FailureKind.RESTART),
                  run(5, Stage.REASON, RunStatus.FAILED, FailureKind.CHECK)], 3)
    assert p.blocked_reason is None and p.attempts == {"reason": 1}  # ...and a fresh budget after the marker
