"""Pure status rules (fyan.state.lifecycle)."""

from __future__ import annotations

from fyan.state.lifecycle import progress, unit_views
from fyan.state.models import DependencyRecord, FailureKind, RunStatus, Stage, StageRun, UnitRecord

_ids = iter(range(1, 10_000))


def run(stage, status, *, kind=None, rewind=None, t=10.0, unit="u"):
    return StageRun(id=next(_ids), unit=unit, stage=stage, attempt=1, status=status, started_at=t, finished_at=t + 1,
                    failure_kind=kind, rewind_to=rewind, attempt_dir="x", reason=f"{stage.value} {status.value}")


S, F = RunStatus.SUCCEEDED, RunStatus.FAILED


def test_success_advances_and_gate_completes():
    p = progress([run(s, S) for s in Stage], 3)
    assert p.complete and p.next_stage is None


def test_rewind_goes_back_and_budget_still_counts():
    runs = [run(Stage.REASON, S), run(Stage.PLAN, S), run(Stage.AUDIT, F, kind=FailureKind.CHECK, rewind=Stage.PLAN)]
    p = progress(runs, 3)
    assert p.next_stage is Stage.PLAN and p.blocked_reason is None
    runs += [run(Stage.PLAN, S), run(Stage.AUDIT, F, kind=FailureKind.CHECK, rewind=Stage.PLAN),
             run(Stage.PLAN, S), run(Stage.AUDIT, F, kind=FailureKind.CHECK, rewind=Stage.PLAN)]
    p = progress(runs, 3)
    assert p.blocked_reason.startswith("audit failed 3 time(s) (budget 3)")


def test_interrupted_runs_do_not_count():
    runs = [run(Stage.REASON, RunStatus.INTERRUPTED)] * 5
    p = progress(runs, 3)
    assert p.next_stage is Stage.REASON and p.blocked_reason is None


def test_environment_failure_blocks_until_the_next_session():
    runs = [run(Stage.REASON, F, kind=FailureKind.ENVIRONMENT, t=10.0)]
    assert progress(runs, 3, session_start=5.0).blocked_reason == "reason failed"
    later = progress(runs, 3, session_start=20.0)
    assert later.blocked_reason is None and later.next_stage is Stage.REASON


def test_blocked_dependency_blocks_dependents_with_its_reason():
    units = [UnitRecord(id=i, order=n, kind="lemma", module=i.upper(), layer=n, statements=[n], provenance="f:1-1")
             for n, i in enumerate(["a", "b", "c"])]
    deps = [DependencyRecord(unit="b", depends_on="a", origin="ref", in_proof=False, evidence="e"),
            DependencyRecord(unit="c", depends_on="b", origin="ref", in_proof=False, evidence="e")]
    runs = [run(Stage.REASON, F, kind=FailureKind.ENVIRONMENT, unit="a", t=10.0)]
    views = unit_views(units, deps, runs, 3, session_start=1.0)
    assert views["a"].status.value == "blocked"
    assert views["b"].reason == "dependency a is blocked: reason failed"
    assert views["c"].reason == "dependency a is blocked: reason failed"  # the root cause, not the chain
    assert views["c"].status.value == "blocked"
    views = unit_views(units, deps, [], 3)
    assert [views[u].status.value for u in "abc"] == ["ready", "waiting", "waiting"]


def test_human_guidance_resets_the_budget_but_not_an_environment_block():
    runs = [run(Stage.REASON, F, kind=FailureKind.CHECK) for _ in range(3)]
    assert progress(runs, 3).blocked_reason.startswith("reason failed 3 time(s)")
    revived = progress(runs, 3, reset_after=runs[-1].id)
    assert revived.blocked_reason is None and revived.next_stage is Stage.REASON
    more = runs + [run(Stage.REASON, F, kind=FailureKind.CHECK) for _ in range(3)]
    assert progress(more, 3, reset_after=runs[-1].id).blocked_reason.startswith("reason failed 3 time(s)")  # counted anew
    env = [run(Stage.REASON, F, kind=FailureKind.ENVIRONMENT, t=10.0)]
    assert progress(env, 3, session_start=5.0, reset_after=env[0].id).blocked_reason == "reason failed"


def test_a_hand_edited_proof_sends_a_complete_unit_back_to_the_gate():
    runs = [run(s, S) for s in Stage]
    assert progress(runs, 3).complete
    reopened = progress(runs + [run(Stage.PROVE, S)], 3)
    assert not reopened.complete and reopened.next_stage is Stage.GATE
    early = progress([run(Stage.REASON, S), run(Stage.PROVE, S)], 3)  # out of order before the audit: ignored
    assert early.next_stage is Stage.PLAN
