"""The Formalizer's request for a re-plan (``fyan.replan``): the lifecycle rule, the gateway's
transition and its crash safety, the verdict's check (accepted and refused evidence), the plan
check's rule for a re-plan, and the helper lemmas carried forward.

Where a refutation is compiled, the toolchain is the test double ``tests/fakes/fake_lake.py``
(``fake_lake``), standing in for ``lean`` as the "Compiling a module" rows of
docs/lean-contract.md describe: it fails a file with an error and warns on a ``sorry``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from fyan.lakepackage.package import render_unit_file, unit_namespace
from fyan.replan.carry import helper_lemmas, with_helpers
from fyan.replan.check import check_verdict
from fyan.replan.plan_check import replan_problems
from fyan.replan.verdict import ACCEPTED, HELPERS, REFUSED, Verdict, negation, proposition
from fyan.lean import declarations
from fyan.state.faults import FAULT_EXIT_CODE
from fyan.state.gateway import CheckContext, CheckOutcome, FreezeSpec, Gateway
from fyan.state.lifecycle import progress
from fyan.state.models import FailureKind, RunStatus, Stage, StageRun
from fyan.stages import stage_spec
from tests.conftest import ROOT
from tests.helpers import ingested

UNIT = "def-a"
ATTEMPTS = 1  # one failed prove attempt would block: a re-plan must not count as one

PLAN = {"roots": ["root_thm"], "nodes": [
    {"name": "root_thm", "kind": "theorem", "statement": "the root", "uses": ["false_lemma"]},
    {"name": "false_lemma", "kind": "theorem", "statement": "a planned lemma", "uses": []},
    {"name": "twice", "kind": "def", "statement": "a definition", "uses": []}]}
SCAFFOLD = ("def twice (n : Nat) : Nat := n + n\n\n"
            "theorem false_lemma (n : Nat) (h : 0 < n) : twice n = n := by\n  sorry\n\n"
            "theorem root_thm (n : Nat) : twice n = 2 * n := by\n  sorry")


def run_at(stage: Stage, rid: int, status: RunStatus, kind: FailureKind | None = None,
           rewind: Stage | None = None) -> StageRun:
    return StageRun(id=rid, unit=UNIT, stage=stage, attempt=1, status=status, started_at=0.0, finished_at=1.0,
                    failure_kind=kind, rewind_to=rewind, reason="why", attempt_dir="")


def ok(stage: Stage, rid: int) -> StageRun:
    return run_at(stage, rid, RunStatus.SUCCEEDED)


# -- the lifecycle rule -----------------------------------------------------------------------

def test_a_replan_rewinds_to_the_planner_uncharged_and_the_plan_goes_straight_to_prove():
    runs = [ok(Stage.REASON, 1), ok(Stage.PLAN, 2), ok(Stage.AUDIT, 3),
            run_at(Stage.PROVE, 4, RunStatus.FAILED, FailureKind.REPLAN, Stage.PLAN)]
    p = progress(runs, ATTEMPTS)
    assert (p.next_stage, p.blocked_reason, p.replans) == (Stage.PLAN, None, 1)
    p = progress([*runs, ok(Stage.PLAN, 5)], ATTEMPTS)
    assert p.next_stage is Stage.PROVE and p.blocked_reason is None  # the audit is not run again
    # an ordinary failed prove attempt is charged (control): the budget of 1 blocks
    p = progress([*runs[:3], run_at(Stage.PROVE, 4, RunStatus.FAILED, FailureKind.CHECK)], ATTEMPTS)
    assert p.blocked_reason is not None and p.replans == 0
    # outside a re-plan, a plan success goes to the audit (control)
    assert progress(runs[:2], ATTEMPTS).next_stage is Stage.AUDIT


def test_a_refused_revised_plan_retries_the_plan_and_still_skips_the_audit_after():
    runs = [ok(Stage.REASON, 1), ok(Stage.PLAN, 2), ok(Stage.AUDIT, 3),
            run_at(Stage.PROVE, 4, RunStatus.FAILED, FailureKind.REPLAN, Stage.PLAN),
            run_at(Stage.PLAN, 5, RunStatus.FAILED, FailureKind.CHECK)]
    assert progress(runs, 3).next_stage is Stage.PLAN
    assert progress([*runs, ok(Stage.PLAN, 6)], 3).next_stage is Stage.PROVE


def test_the_bound_blocks_for_a_human_until_guidance_and_a_restart_clears_the_count():
    base = [ok(Stage.REASON, 1), ok(Stage.PLAN, 2), ok(Stage.AUDIT, 3),
            run_at(Stage.PROVE, 4, RunStatus.FAILED, FailureKind.REPLAN, Stage.PLAN), ok(Stage.PLAN, 5)]
    blocked = run_at(Stage.PROVE, 6, RunStatus.FAILED, FailureKind.REPLAN)  # the check found the bound reached
    p = progress([*base, blocked], 3)
    assert p.blocked_reason == "why" and p.replans == 1
    assert progress([*base, blocked], 3, reset_after=6).blocked_reason is None  # human guidance after it
    restart = run_at(Stage.REASON, 7, RunStatus.INTERRUPTED, FailureKind.RESTART)
    assert progress([*base, blocked, restart], 3).replans == 0


# -- the gateway's transition and a crash in the middle of it ---------------------------------

def passing(ctx):
    return CheckOutcome(True, "ok (test check)")


def freezing(ctx):
    return CheckOutcome(True, "frozen (test check)", freezes=[FreezeSpec(
        decl="T.DefA.root_thm", normalized_signature="theorem root_thm (n : Nat) : twice n = 2 * n",
        signature_hash="h", bound_inputs={})])


def replanning(ctx):
    return CheckOutcome(False, "re-plan 1 of 3 (test check)", derived={ACCEPTED: b'{"run": 0}\n'},
                        rewind_to=Stage.PLAN, failure_kind=FailureKind.REPLAN)


CHECKS = {Stage.REASON: passing, Stage.PLAN: passing, Stage.AUDIT: freezing, Stage.PROVE: replanning,
          Stage.GATE: passing}


def to_prove(tmp_path):
    project, gw = ingested(tmp_path, checks=CHECKS)
    for stage in (Stage.REASON, Stage.PLAN, Stage.AUDIT):
        run = gw.begin(UNIT, stage, ATTEMPTS)
        for rel in stage_spec(stage).outputs:
            path = project.paths.root / run.attempt_dir / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"{rel}\n")
        assert gw.finish(run).status is RunStatus.SUCCEEDED
    return project, gw


def test_a_replan_keeps_the_roots_frozen_and_costs_no_prove_attempt(tmp_path):
    project, gw = to_prove(tmp_path)
    run = gw.begin(UNIT, Stage.PROVE, ATTEMPTS)
    (project.paths.root / run.attempt_dir / "Basic.lean").write_text("x\n")
    done = gw.finish(run)
    assert (done.failure_kind, done.rewind_to) == (FailureKind.REPLAN, Stage.PLAN)
    view = gw.store.views(ATTEMPTS)[UNIT]
    assert (view.status.value, view.next_stage, view.replans) == ("ready", Stage.PLAN, 1)
    assert [f.decl for f in gw.store.freezes(UNIT)] == ["T.DefA.root_thm"]  # still active
    assert (project.paths.unit(UNIT) / ACCEPTED).read_text() == '{"run": 0}\n'
    # an audit repair (rewind to plan, another kind) unfreezes: the control
    gw.checks[Stage.PROVE] = lambda ctx: CheckOutcome(False, "repair", rewind_to=Stage.PLAN)
    plan = gw.begin(UNIT, Stage.PLAN, ATTEMPTS)
    for rel in stage_spec(Stage.PLAN).outputs:
        (project.paths.root / plan.attempt_dir / rel).write_text("y\n")
    gw.finish(plan)
    assert gw.store.views(ATTEMPTS)[UNIT].next_stage is Stage.PROVE
    run = gw.begin(UNIT, Stage.PROVE, ATTEMPTS)
    (project.paths.root / run.attempt_dir / "Basic.lean").write_text("x\n")
    gw.finish(run)
    assert gw.store.freezes(UNIT) == []


CRASH_SCRIPT = """
import sys
from fyan.project import Project
from fyan.state.gateway import Gateway, CheckOutcome
from fyan.state.models import FailureKind, Stage
project = Project.open(sys.argv[1])
check = lambda ctx: CheckOutcome(False, "re-plan 1 of 3", derived={"replan/verdict.json": b"{}\\n"},
                                 rewind_to=Stage.PLAN, failure_kind=FailureKind.REPLAN)
gw = Gateway(project, {Stage.PROVE: check})
run = gw.begin("def-a", Stage.PROVE, 1)
(project.paths.root / run.attempt_dir / "Basic.lean").write_text("x\\n")
gw.finish(run)
print("not reached")
"""


@pytest.mark.parametrize("point", ["finish:after_copy", "finish:after_commit"])
def test_a_crash_in_the_middle_of_the_rewind_recovers(tmp_path, point):
    project, gw = to_prove(tmp_path)
    gw.close()
    proc = subprocess.run([sys.executable, "-c", CRASH_SCRIPT, str(project.paths.root)],
                          env={**os.environ, "FYAN_FAULT_AT": point, "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == FAULT_EXIT_CODE, proc.stderr
    gw = Gateway(project, CHECKS)
    interrupted = gw.recover()
    view = gw.store.views(ATTEMPTS)[UNIT]
    published = project.paths.unit(UNIT) / ACCEPTED
    if point == "finish:after_copy":  # the old state: the prove attempt runs again, uncharged
        assert [r.stage for r in interrupted] == [Stage.PROVE]
        assert (view.next_stage, view.replans, published.exists()) == (Stage.PROVE, 0, False)
    else:  # the new state, rolled forward: the rewind and its record
        assert interrupted == []
        assert (view.next_stage, view.replans, published.read_text()) == (Stage.PLAN, 1, "{}\n")
    assert view.status.value == "ready"
    assert [f.decl for f in gw.store.freezes(UNIT)] == ["T.DefA.root_thm"]
    assert not (project.paths.unit(UNIT) / ".staging").exists()


# -- the verdict's check ---------------------------------------------------------------------

def planned(tmp_path, extra_toml: str = ""):
    """A project whose unit ``def-a`` has the plan ``PLAN``/``SCAFFOLD`` published, frozen at
    ``root_thm``, and a prove attempt open; returns (project, gateway, context)."""
    project, gw = ingested(tmp_path, checks=CHECKS, extra_toml=extra_toml)
    unit = gw.store.unit(UNIT)
    files = {Stage.PLAN: {"lemma_dag.json": json.dumps(PLAN), "blueprint.md": "b\n",
                          "Statement.lean": render_unit_file(project, gw.store, unit, SCAFFOLD, "Statement")}}
    for stage in (Stage.REASON, Stage.PLAN, Stage.AUDIT):
        run = gw.begin(UNIT, stage, 3)
        for rel in stage_spec(stage).outputs:
            path = project.paths.root / run.attempt_dir / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(files.get(stage, {}).get(rel, f"{rel}\n"))
        assert gw.finish(run).status is RunStatus.SUCCEEDED
    run = gw.begin(UNIT, Stage.PROVE, 3)
    ctx = CheckContext(project, gw.store, unit, run, project.paths.root / run.attempt_dir)
    ns = unit_namespace(project, unit)
    ctx.attempt_dir.joinpath("Basic.lean").write_text(render_unit_file(project, gw.store, unit, SCAFFOLD.replace(
        "theorem root_thm", "theorem helper_ok (n : Nat) : n + 0 = n := by\n  simp\n\n"
        "theorem helper_from_false (n : Nat) : twice 1 = 1 := false_lemma 1 (by decide)\n\ntheorem root_thm"),
        "Basic"))
    assert ns == "T.DefA"
    return project, gw, ctx


def give(ctx, verdict: dict | str) -> None:
    ctx.attempt_dir.joinpath("verdict.json").write_text(verdict if isinstance(verdict, str) else json.dumps(verdict))


REFUTE = {"kind": "lemma_false", "lemma": "false_lemma",
          "negation_proof": "fun h => absurd (h 1 (by decide)) (by decide)"}


def test_no_verdict_leaves_the_ordinary_prove_check(tmp_path):
    _, _, ctx = planned(tmp_path)
    assert check_verdict(ctx) is None


def test_a_refutation_compiled_by_fyan_is_a_replan_with_the_helpers_kept(tmp_path, fake_lake):
    project, gw, ctx = planned(tmp_path)
    give(ctx, {**REFUTE, "negation_statement": "¬(∀ (n : Nat) (h : 0 < n), twice n = n)"})
    out = check_verdict(ctx)
    assert out is not None and (out.failure_kind, out.rewind_to) == (FailureKind.REPLAN, Stage.PLAN), out.reason
    assert out.reason.startswith("re-plan 1 of 3: lemma_false false_lemma (Lean proof of "
                                 "`¬ (∀ (n : Nat) (h : 0 < n), twice n = n)` compiled with no sorry")
    compiled = (ctx.attempt_dir / "refutation.lean").read_text()
    # the plan's definitions and Fyan's rendering of the negation; never the plan's sorry lemmas
    assert "def twice (n : Nat) : Nat := n + n" in compiled and "sorry" not in compiled
    assert "theorem false_lemma_refuted : ¬ (∀ (n : Nat) (h : 0 < n), twice n = n) :=" in compiled
    assert [c["module"] for c in fake_lake.compiles()][-1] == "T.DefA.Refutation"
    record = json.loads(out.derived[ACCEPTED])
    assert record["helpers"] == ["helper_ok"]  # the helper proved from the false lemma is dropped
    assert "theorem helper_ok" in out.derived[HELPERS].decode() and "helper_from_false" not in out.derived[HELPERS].decode()
    assert out.event_data["replan"]["kind"] == "lemma_false"


def test_a_refutation_lean_rejects_is_recorded_and_worth_nothing(tmp_path, fake_lake):
    _, _, ctx = planned(tmp_path)
    fake_lake.scenario({"build": {"exit": 1, "output": ["error: @FILE@:12:2: type mismatch"]},
                        "build_only": ["T.DefA.Refutation"]})
    give(ctx, REFUTE)
    out = check_verdict(ctx)
    assert out is not None and out.failure_kind is FailureKind.CHECK and out.rewind_to is None
    assert "the refutation does not compile" in out.reason
    assert json.loads(out.derived[REFUSED])["accepted"] is False


@pytest.mark.parametrize("verdict, why", [
    ("{not json", "verdict.json does not validate"),
    ({"kind": "lemma_false", "lemma": "false_lemma"}, "needs evidence"),
    ({**REFUTE, "lemma": "no_such_lemma"}, "'no_such_lemma' is not a lemma of the plan"),
    ({**REFUTE, "lemma": "root_thm"}, "root_thm is a frozen root"),
    ({**REFUTE, "negation_statement": "¬ (∀ (n : Nat), twice n = n)"}, "is not the planned lemma's as Fyan renders it"),
    ({**REFUTE, "negation_proof": "by sorry"}, "the refutation was not compiled"),
    ({**REFUTE, "negation_proof": "by native_decide"}, "the refutation was not compiled"),
    ({"kind": "lemma_false", "lemma": "false_lemma", "counterexample": {"predicate_source": "def predicate(n): return True"}},
     "the counterexample program does not validate"),
    ({"kind": "lemma_false", "lemma": "false_lemma", "counterexample": {"language": "lean", "lean_instance": "1 = 2"}},
     "a Lean refutation goes in negation_proof"),
    ({"kind": "step_too_hard", "lemma": "false_lemma", "tried": "induction on n, then simp; stuck at the step case"},
     "left no iteration log"),
])
def test_a_verdict_whose_evidence_does_not_check_is_an_ordinary_failed_attempt(tmp_path, fake_lake, verdict, why):
    _, _, ctx = planned(tmp_path)
    before = len(fake_lake.compiles())
    give(ctx, verdict)
    out = check_verdict(ctx)
    assert out is not None and not out.passed and out.failure_kind is FailureKind.CHECK and out.rewind_to is None
    assert why in out.reason, out.reason
    assert json.loads(out.derived[REFUSED])["why"] in out.reason
    assert ACCEPTED not in out.derived
    assert len(fake_lake.compiles()) == before  # nothing refused was compiled


def test_without_a_toolchain_a_refutation_is_not_checked(tmp_path, no_lake):
    _, _, ctx = planned(tmp_path)
    give(ctx, REFUTE)
    out = check_verdict(ctx)
    assert out is not None and out.failure_kind is FailureKind.CHECK and "not checked" in out.reason


def test_step_too_hard_needs_a_candidate_the_review_still_refused(tmp_path):
    _, _, ctx = planned(tmp_path)
    give(ctx, {"kind": "step_too_hard", "lemma": "false_lemma", "tried": "induction on n, then simp; stuck at the step"})
    log = ctx.attempt_dir / "iterations.json"
    log.write_text(json.dumps([{"iteration": 1, "review": "clean"}]))
    out = check_verdict(ctx)
    assert out is not None and out.failure_kind is FailureKind.CHECK and "passed the review" in out.reason
    log.write_text(json.dumps([{"iteration": 1, "review": ["- line 3: sorry"]}]))
    out = check_verdict(ctx)
    assert out is not None and (out.failure_kind, out.rewind_to) == (FailureKind.REPLAN, Stage.PLAN)


def test_beyond_the_bound_a_checked_verdict_blocks_for_a_human(tmp_path):
    project, gw, ctx = planned(tmp_path, extra_toml="[scheduler]\nmax_replans = 0\n")
    give(ctx, {"kind": "step_too_hard", "lemma": "false_lemma", "tried": "induction on n, then simp; stuck at the step"})
    (ctx.attempt_dir / "iterations.json").write_text(json.dumps([{"iteration": 1, "review": ["- sorry"]}]))
    gw.checks[Stage.PROVE] = lambda c: check_verdict(c) or CheckOutcome(False, "no verdict")
    done = gw.finish(ctx.run)
    assert (done.failure_kind, done.rewind_to) == (FailureKind.REPLAN, None)
    view = gw.store.views(3)[UNIT]
    assert view.status.value == "blocked" and "bound ([scheduler] max_replans)" in (view.reason or "")
    from fyan.orchestrator.status import classify

    cause = classify(view.reason or "")
    assert cause.summary.startswith("re-plan bound reached") and "guidance/<unit>.md" in (cause.remedy or "")
    assert classify("prove failed 3 time(s) (budget 3); last: x").summary.startswith("out of attempts")  # control


# -- the plan check's rule for a re-plan ------------------------------------------------------

def replanned(tmp_path):
    project, gw, ctx = planned(tmp_path)
    gw.checks[Stage.PROVE] = replanning
    (ctx.attempt_dir / "Basic.lean").write_text("x\n")
    gw.finish(ctx.run)
    gw.store.freezes(UNIT)
    run = gw.begin(UNIT, Stage.PLAN, 3)
    unit = gw.store.unit(UNIT)
    return project, gw, CheckContext(project, gw.store, unit, run, project.paths.root / run.attempt_dir)


def dag(*roots: str):
    from fyan.models.replies import LemmaDag

    return LemmaDag.model_validate({"roots": list(roots), "nodes": PLAN["nodes"]})


def test_a_replan_may_revise_the_planned_lemmas_only(tmp_path):
    project, gw, ctx = replanned(tmp_path)
    unit = gw.store.unit(UNIT)
    revised = SCAFFOLD.replace("(h : 0 < n) : twice n = n", ": twice n = n + n")
    assert replan_problems(ctx, dag("root_thm"), render_unit_file(project, gw.store, unit, revised, "Statement")) == []
    changed_root = SCAFFOLD.replace("twice n = 2 * n", "twice n = n * 2")
    problems = replan_problems(ctx, dag("root_thm"), render_unit_file(project, gw.store, unit, changed_root, "Statement"))
    assert problems and "T.DefA.root_thm: signature changed in Statement.lean" in problems[0]
    changed_def = SCAFFOLD.replace("n + n", "2 * n", 1)
    problems = replan_problems(ctx, dag("root_thm"), render_unit_file(project, gw.store, unit, changed_def, "Statement"))
    assert problems == ["T.DefA.twice: a definition of the frozen plan changed (`def twice (n : Nat) : Nat := n + n` → "
                        "`def twice (n : Nat) : Nat := 2 * n`)"]
    problems = replan_problems(ctx, dag("false_lemma"), render_unit_file(project, gw.store, unit, revised, "Statement"))
    assert problems == ["the frozen root(s) root_thm must stay roots of the lemma DAG"]


def test_outside_a_replan_the_rule_does_not_apply(tmp_path):
    project, gw = ingested(tmp_path, checks=CHECKS)
    run = gw.begin(UNIT, Stage.REASON, 3)
    (project.paths.root / run.attempt_dir / "proof.md").write_text("p\n")
    gw.finish(run)
    run = gw.begin(UNIT, Stage.PLAN, 3)
    ctx = CheckContext(project, gw.store, gw.store.unit(UNIT), run, project.paths.root / run.attempt_dir)
    anything = render_unit_file(project, gw.store, gw.store.unit(UNIT), "theorem x : 1 = 1 := by\n  sorry", "Statement")
    assert replan_problems(ctx, dag("root_thm"), anything) == []


# -- the verdict's model, the negation, the carried helpers ------------------------------------

def test_the_negation_is_rendered_from_the_planned_lemma():
    decls = declarations.scan(SCAFFOLD + "\n\ntheorem closed : 1 + 1 = 2 := by\n  sorry")
    assert negation(declarations.find(decls, "false_lemma")) == "¬ (∀ (n : Nat) (h : 0 < n), twice n = n)"
    assert negation(declarations.find(decls, "closed")) == "¬ (1 + 1 = 2)"
    with pytest.raises(ValueError, match="what was tried"):
        Verdict(kind="step_too_hard", lemma="x", tried="hard")


def test_helpers_are_carried_after_the_new_plan_unless_it_declares_them():
    helpers = "theorem helper_ok (n : Nat) : n + 0 = n := by\n  simp\n"
    start = with_helpers("theorem root_thm : True := by\n  sorry", helpers)
    assert start.index("root_thm") < start.index("helper_ok")
    assert with_helpers("theorem helper_ok (n : Nat) : n + 0 = n := by\n  sorry", helpers).count("helper_ok") == 1
    assert helper_lemmas("theorem a : 1 = 1 := by\n  sorry\n\ntheorem b : 1 = 1 := rfl", set(), "z") == [
        ("b", "theorem b : 1 = 1 := rfl")]


CORE_LEMMA = """prelude
inductive N where
  | z : N
  | s (n : N) : N

inductive Le' : N → N → Prop where
  | refl (a : N) : Le' a a

theorem orig (n : N) {m : N} ⦃k : N⦄ (h : Le' n m) (hk : Le' m k) : Le' n n := Le'.refl n
"""


@pytest.mark.lean_core
def test_the_rendered_proposition_is_the_lemma_s_own_on_real_lean(core_lean, tmp_path):
    """Real Lean 4.35.0 (core tier): the ``∀`` Fyan renders from a theorem's header (explicit,
    implicit and strict-implicit binders) is the proposition the theorem proves: the theorem
    itself is accepted as its proof, and a different one is refused (control)."""
    decl = declarations.find(declarations.scan(CORE_LEMMA), "orig")
    stated = proposition(decl)
    assert stated == "∀ (n : N) {m : N} ⦃k : N⦄ (h : Le' n m) (hk : Le' m k), Le' n n"
    for name, claim, expect in (("same", stated, 0), ("other", stated.replace("Le' n n", "Le' m m"), 1)):
        src = tmp_path / f"{name}.lean"
        src.write_text(CORE_LEMMA + f"\ntheorem check : {claim} := orig\n")
        proc = subprocess.run([str(core_lean), str(src)], capture_output=True, text=True, timeout=120)
        assert proc.returncode == expect, proc.stdout + proc.stderr


SEARCH = {"predicate_source": "def predicate(n):\n    return n <= 0 or n + n == n\n", "domain": [{"name": "n", "lo": 0, "hi": 4}]}


def test_a_counterexample_executed_by_the_refutation_runner_is_a_replan(tmp_path):
    """The runner really runs (``fyan.refute``, confined by bubblewrap where it works; without a
    sandbox it gives no evidence, which this test then shows as a refusal)."""
    _, _, ctx = planned(tmp_path)
    give(ctx, {"kind": "lemma_false", "lemma": "false_lemma", "counterexample": SEARCH})
    out = check_verdict(ctx)
    outcome = json.loads((ctx.attempt_dir / "refutation" / "outcome.json").read_text())
    assert outcome["target"] == {"id": "false_lemma", "text": "∀ (n : Nat) (h : 0 < n), twice n = n"}  # set by Fyan
    assert out is not None
    if outcome["worthless_reason"] is not None:
        assert out.failure_kind is FailureKind.CHECK and "did not refute" in out.reason
        pytest.skip(f"the refutation runner gives no evidence here: {outcome['worthless_reason']}")
    assert (out.failure_kind, out.rewind_to) == (FailureKind.REPLAN, Stage.PLAN), out.reason
    assert "false at {'n': 1}" in out.reason
    # a search that finds nothing is worth nothing (control)
    give(ctx, {"kind": "lemma_false", "lemma": "false_lemma", "counterexample": {
        **SEARCH, "predicate_source": "def predicate(n):\n    return True\n"}})
    out = check_verdict(ctx)
    assert out is not None and out.failure_kind is FailureKind.CHECK and "did not refute" in out.reason


def test_the_planner_and_the_next_prove_attempt_get_the_checked_verdict_and_the_helpers(tmp_path):
    from fyan.agents.stages import UnitContext
    from fyan.agents.replan import attempt_verdict, carried_helpers, record_workspace_verdict, replan_request

    project, gw, ctx = planned(tmp_path)
    u = UnitContext(project, gw.store, ctx.unit, ctx.run)
    record_workspace_verdict(u, {"verdict.json": "{broken"})  # a command agent's file, copied as written
    assert attempt_verdict(u).startswith("malformed verdict")
    record_workspace_verdict(u, {"verdict.json": json.dumps(
        {"kind": "step_too_hard", "lemma": "false_lemma", "tried": "induction on n, then simp; stuck at the step"})})
    assert attempt_verdict(u) == "step_too_hard false_lemma"
    (ctx.attempt_dir / "iterations.json").write_text(json.dumps([{"iteration": 1, "review": ["- sorry"]}]))
    gw.checks[Stage.PROVE] = lambda c: check_verdict(c) or CheckOutcome(False, "no verdict")
    assert gw.finish(ctx.run).failure_kind is FailureKind.REPLAN
    plan = gw.begin(UNIT, Stage.PLAN, 3)
    u = UnitContext(project, gw.store, ctx.unit, plan)
    request = replan_request(u)
    assert "- verdict: `step_too_hard` on the planned lemma `false_lemma`" in request
    assert "theorem helper_ok" in request and "helper_from_false" not in request
    assert "theorem helper_ok" in carried_helpers(u)
    # before any re-plan the Planner's section is empty (control)
    other, gw2 = ingested(tmp_path / "other", checks=CHECKS)
    run = gw2.begin(UNIT, Stage.REASON, 3)
    assert replan_request(UnitContext(other, gw2.store, gw2.store.unit(UNIT), run)) == "(none)"
