"""Refutation inside the stages: the Reasoner review's counterexample searches (recorded model
replies served by the replay provider from a cassette; the searches themselves really run,
confined), the reason check's count, the plan check's refusal of a refuted lemma, a frozen
statement refuted on a small instance (real core Lean 4.35.0) blocking the unit, and
``fyan status``'s counts.

The cassette is written by the recording provider around ``Scripted`` (authored replies: no model
API here), then a second, identical project replays it through ``ReplayProvider``: what is tested
is the replayed run."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from fyan.agents.providers.replay import RecordingProvider, ReplayProvider
from fyan.gates.stages import check_plan, frozen_refutation_outcome, refutation_evidence
from fyan.orchestrator.engine import Engine
from fyan.orchestrator.status import classify, project_status, refutation_counts
from fyan.orchestrator.status_text import status_text
from fyan.refute import record
from fyan.refute.frozen import frozen_program
from fyan.specifier.ingest import ingest
from fyan.stages import stage_checks
from fyan.state.gateway import CheckContext, Gateway
from fyan.state.lifecycle import progress
from fyan.state.models import FailureKind, FreezeRecord, RunStatus, Stage, StageRun
from tests.helpers import CHAIN_TEX, make_project
from tests.sandboxing import needs_bwrap
from tests.test_stages import PROOF, Scripted

EVEN_STEP = "every natural number below 10 is even"


def search(step: str, assertion: str, predicate: str, lo: int = 0, hi: int = 9) -> dict:
    return {"step": step, "assertion": assertion, "language": "python", "predicate": predicate,
            "domain": [{"name": "n", "lo": lo, "hi": hi}]}


def review(verdict: str = "sound", searches: list[dict] | None = None) -> str:
    return json.dumps({"verdict": verdict, "objections": [], "counterexamples": searches or []})


REFUTING = [search("2", EVEN_STEP, "def predicate(n):\n    return n % 2 == 0\n"),
            search("3", "every natural number below 10 is below 7", "def predicate(n):\n    return n < 7\n")]


def replayed(tmp_path: Path, replies: dict, toml: str = "", stage: Stage = Stage.REASON):
    """Record ``replies`` into a cassette in one project, replay it in a fresh identical one:
    (project, gateway, the replayed run)."""
    cassette = tmp_path / "cassette.jsonl"
    first = make_project(tmp_path / "rec", CHAIN_TEX, toml)
    g1 = Gateway(first, stage_checks())
    ingest(first, g1)
    recorder = RecordingProvider(Scripted(**replies), cassette, label="authored test response")
    Engine(first, g1, providers=lambda s: recorder).step("def-a", stage)
    g1.close()
    project = make_project(tmp_path / "p", CHAIN_TEX, toml)
    gateway = Gateway(project, stage_checks())
    ingest(project, gateway)
    run = Engine(project, gateway, providers=lambda s: ReplayProvider(cassette)).step("def-a", stage)
    return project, gateway, run


@needs_bwrap
def test_two_executed_refutations_force_a_revision_that_keeps_the_other_steps(tmp_path, no_lake):
    replies = {"reason": [PROOF + " Step 2: " + EVEN_STEP + ".", PROOF + " (revised)"],
               "reason_review": [review("sound", REFUTING), review("sound")]}
    project, gateway, run = replayed(tmp_path, replies)
    assert run.status is RunStatus.SUCCEEDED, run.reason
    calls = [c for c in gateway.store.model_calls("def-a")]
    assert all(c.replay for c in calls) and len(calls) == 4  # proof, review, revised proof, review
    attempt = project.paths.root / run.attempt_dir
    requests = sorted((attempt / "calls").glob("*.request.json"))
    asked = requests[2].read_text()
    assert "refuted by executed, re-checked counterexamples" in asked and "{'n': 1}" in asked
    assert "keep every step they do not touch" in asked
    published = record.read_log(project.paths.unit("def-a") / record.LOG)
    assert [e.outcome.witness for e in published.refuted()] == [{"n": 1}, {"n": 7}]
    assert all(e.attempt == run.attempt_dir for e in published.entries)
    assert (attempt / "refutations" / "1-1" / "recheck" / "spec.json").is_file()
    assert refutation_counts(gateway.store)["def-a"] == {"executed": 2, "refuting": 2, "worthless": 0}
    gateway.close()


@needs_bwrap
def test_worthless_searches_never_count(tmp_path, no_lake):
    worthless = [search("2", EVEN_STEP, "def predicate(n)\n    return False\n"),
                 search("3", EVEN_STEP, "def predicate(n):\n    print('counterexample at n=1')\n    return True\n"),
                 search("4", EVEN_STEP, "import socket\ndef predicate(n):\n    socket.socket().connect(('1.1.1.1', 80))\n")]
    replies = {"reason": [PROOF + " Step 2: " + EVEN_STEP + "."], "reason_review": [review("sound", worthless)]}
    project, gateway, run = replayed(tmp_path, replies)
    assert run.status is RunStatus.SUCCEEDED, run.reason
    assert len(gateway.store.model_calls("def-a")) == 2  # a proof and its review: no revision
    assert refutation_counts(gateway.store)["def-a"] == {"executed": 1, "refuting": 0, "worthless": 2}
    assert record.read_log(project.paths.unit("def-a") / record.LOG).refuted() == []
    gateway.close()


@needs_bwrap
def test_refutations_that_still_stand_after_the_last_revision_fail_the_attempt(tmp_path, no_lake):
    replies = {"reason": [PROOF + " Step 2: " + EVEN_STEP + "."], "reason_review": [review("sound", REFUTING)]}
    project, gateway, run = replayed(tmp_path, replies, "[agents]\nreview_rounds = 0\n")
    assert run.status is RunStatus.FAILED
    assert "2 executed refutation(s) still stand against the proof after 0 revision(s)" in run.reason
    assert refutation_counts(gateway.store)["def-a"]["refuting"] == 2
    gateway.close()


@needs_bwrap
def test_a_review_search_whose_fields_do_not_fit_gets_a_form_repair(tmp_path, no_lake):
    bad = {"step": "2", "assertion": EVEN_STEP, "language": "python", "domain": [{"name": "n", "lo": 0, "hi": 3}]}
    replies = {"reason": [PROOF], "reason_review": [review("sound", [bad]), review("sound")]}
    project, gateway, run = replayed(tmp_path, replies)
    assert run.status is RunStatus.SUCCEEDED
    assert not (project.paths.root / run.attempt_dir / "refutations").exists()
    gateway.close()


def test_the_review_prompts_reply_example_is_a_valid_review_with_a_runnable_search():
    from fyan.agents.schemas import ReasonReview
    from tests.conftest import ROOT

    text = (ROOT / "prompts" / "reason_review.system.md").read_text()
    example = ReasonReview.model_validate_json(text.rsplit("\n", 2)[-2].replace('"sound" | "refuted"', '"sound"')
                                              .replace('"critical" | "minor"', '"minor"'))
    program = example.counterexamples[0].program()
    assert program.language == "python" and program.domain[0].size() == 51
    assert "predicate(**values) -> bool" in text and "Not (<instance>)" in text


# -- the reason check's count ---------------------------------------------------------------------

def _ctx(project, attempt: Path, store=None, unit_id="def-a", run_id=7) -> CheckContext:
    unit = store.unit(unit_id) if hasattr(store, "unit") else SimpleNamespace(id=unit_id, kind="definition")
    run = SimpleNamespace(id=run_id, attempt_dir=project.paths.rel(attempt))
    return CheckContext(project, store, unit, run, attempt)  # type: ignore[arg-type]


@needs_bwrap
def test_the_reason_check_recounts_from_the_outcome_files_and_drops_a_forged_claim(tmp_path):
    from fyan.agents.schemas import CounterexampleSearch

    project = make_project(tmp_path / "p", CHAIN_TEX, "[refute]\nthreshold = 1\n")
    attempts = project.paths.root / ".fyan" / "attempts" / "def-a"
    attempt, failed = attempts / "000007-reason", attempts / "000005-reason"
    attempt.mkdir(parents=True)
    failed.mkdir(parents=True)
    limits = record.RefutationLimits(timeout_s=5, memory_mb=512)
    proof = PROOF + " Step 2: " + EVEN_STEP + "."
    programs = [CounterexampleSearch(**s).program() for s in REFUTING]
    log = record.run_proposals(programs[:1], attempt, 1, proof, limits)
    record.run_proposals(programs[1:], failed, 1, "an earlier proof", limits)  # an attempt the agent gave up on
    store = SimpleNamespace(runs=lambda unit: [SimpleNamespace(id=5, stage=Stage.REASON,
                                                               attempt_dir=project.paths.rel(failed))])
    derived, problem = refutation_evidence(_ctx(project, attempt, store=store), proof)
    assert problem and problem.startswith("1 executed refutation(s) (threshold 1) still stand against proof.md")
    published = json.loads(derived[record.LOG])["entries"]
    assert [(e["attempt"], e["outcome"]["witness"]) for e in published] == [
        (project.paths.rel(failed), {"n": 7}), (project.paths.rel(attempt), {"n": 1})]
    # the proof revised without the step: nothing stands
    _, problem = refutation_evidence(_ctx(project, attempt, store=store), PROOF + " A different, repaired step 2.")
    assert problem is None
    # a log claiming a refutation whose outcome file says otherwise counts for nothing
    outcome = json.loads((attempt / "refutations" / "1-1" / "outcome.json").read_text())
    (attempt / "refutations" / "1-1" / "outcome.json").write_text(json.dumps({**outcome, "program_sha256": "0" * 64}))
    assert log.entries[0].counts
    derived, problem = refutation_evidence(_ctx(project, attempt, store=store), proof)
    assert problem is None and derived == {}


# -- the plan check ----------------------------------------------------------------------------------

def _published(project, target_id: str, text: str) -> None:
    from fyan.refute.models import RefutationOutcome, TargetAssertion

    outcome = RefutationOutcome(executed=True, refutes=True, witness={"n": 3}, program_sha256="a" * 64,
                                target=TargetAssertion(id=target_id, text=text), language="python")
    log = record.RefutationLog(entries=[record.RefutationEntry(round=1, folder="refutations/1-1", outcome=outcome,
                                                               attempt=".fyan/attempts/def-a/000003-reason")])
    unit = project.paths.unit("def-a")
    unit.mkdir(parents=True, exist_ok=True)
    (unit / record.LOG).write_text(log.model_dump_json())


def _plan(project, attempt: Path, nodes: list[dict]) -> None:
    attempt.mkdir(parents=True, exist_ok=True)
    (attempt / "lemma_dag.json").write_text(json.dumps({"roots": [nodes[0]["name"]], "nodes": nodes}))
    (attempt / "Statement.lean").write_text("not reached\n")


@pytest.mark.parametrize("node, hit", [
    ({"name": "aux_bound", "kind": "theorem", "statement": "some other words"}, "aux_bound is the assertion 'aux_bound'"),
    ({"name": "helper", "kind": "theorem", "statement": "  Every natural number  below $10$ is EVEN. "},
     "helper is the assertion 'aux_bound' refuted at {'n': 3} (evidence .fyan/attempts/def-a/000003-reason/"),
])
def test_the_plan_check_refuses_a_plan_that_keeps_a_refuted_assertion(tmp_path, node, hit):
    project = make_project(tmp_path / "p", CHAIN_TEX)
    _published(project, "aux_bound", EVEN_STEP)
    attempt = project.paths.root / ".fyan" / "attempts" / "def-a" / "000004-plan"
    _plan(project, attempt, [node])
    out = check_plan(_ctx(project, attempt))
    assert not out.passed and out.reason.startswith("the plan still contains assertion(s) refuted by executed")
    assert hit in out.reason


def test_the_plan_check_lets_other_lemmas_through_to_its_other_checks(tmp_path):
    project = make_project(tmp_path / "p", CHAIN_TEX)
    gateway = Gateway(project, stage_checks())
    ingest(project, gateway)
    _published(project, "aux_bound", EVEN_STEP)
    attempt = project.paths.root / ".fyan" / "attempts" / "def-a" / "000004-plan"
    _plan(project, attempt, [{"name": "fine", "kind": "theorem", "statement": "every natural number is a number"}])
    out = check_plan(_ctx(project, attempt, store=gateway.store))
    assert not out.passed and out.reason.startswith("Statement.lean was changed outside")  # the next check's
    gateway.close()


# -- frozen statements ---------------------------------------------------------------------------------

@pytest.mark.parametrize("signature, instance", [
    ("theorem t (a b : Bool) : a = b", "∀ (a : Bool), ∀ (b : Bool), (a = b)"),
    ("theorem t {n : ℕ} (h : 0 < n) (i : Fin 3) : n * i.val ≠ 7",
     "∀ (n : ℕ), n < 6 → ∀ (h : 0 < n), ∀ (i : Fin 3), (n * i.val ≠ 7)"),
])
def test_fyan_writes_the_small_instance_check_from_the_frozen_signature(signature, instance):
    program, why = frozen_program("U.t", signature, 6)
    assert program is not None and program.lean_instance == instance and program.origin == "fyan"
    assert program.target.id == "frozen:U.t" and why == f"U.t: decide on {instance}"


@pytest.mark.parametrize("signature, why", [
    ("theorem t (x : ℝ) : x * x ≥ 0", "binder x : ℝ is not over a finite or small type"),
    ("theorem t {α : Type} [Group α] (a : α) : a = a", "binder α : Type is not over a finite or small type"),
    ("def f : ℕ := 3", "not a theorem"),
])
def test_no_check_where_a_binder_is_not_small(signature, why):
    program, reason = frozen_program("U.t", signature, 6)
    assert program is None and why in reason


def _freeze(signature: str) -> FreezeRecord:
    return FreezeRecord(id=1, unit="def-a", run_id=3, decl="U.t", role="root", normalized_signature=signature,
                        signature_hash="sha256:x", bound_inputs={}, created_at=0.0)


@needs_bwrap
@pytest.mark.lean_core
@pytest.mark.parametrize("signature, refuted", [
    ("theorem t (a b : Bool) : Eq (Bool.or a b) (Bool.and a b)", True),
    ("theorem t (a b : Bool) : Eq (Bool.or a b) (Bool.or b a)", False),
])
def test_a_frozen_statement_refuted_on_a_small_instance_blocks_the_unit(tmp_path, core_lean, monkeypatch,
                                                                        signature, refuted):
    """The toolchain's discovery is replaced by the real core Lean with the prelude stand-in as the
    check's header (docs/lean-contract.md, "Refutation checks"): the check Fyan writes, the
    attempt's run and the check's own confirming run are real."""
    from fyan.agents.stages import UnitContext, _frozen_refuted
    from fyan.refute import LeanCheck
    from tests.lean_core import library_dir
    from tests.lean_prelude import DECIDE_SUPPORT

    check = LeanCheck(lean=Path(core_lean), readable=(Path(core_lean).resolve().parents[1], library_dir()))
    monkeypatch.setattr("fyan.refute.review.lean_check", lambda project, log_dir=None: check)
    monkeypatch.setattr("fyan.refute.review.lean_header", lambda project: DECIDE_SUPPORT)
    project = make_project(tmp_path / "p", CHAIN_TEX, "[refute]\ntimeout_s = 60\n")
    attempt = project.paths.root / ".fyan" / "attempts" / "def-a" / "000009-prove"
    attempt.mkdir(parents=True)
    store = SimpleNamespace(freezes=lambda unit: [_freeze(signature)], runs=lambda unit: [])
    run = SimpleNamespace(id=9, attempt_dir=project.paths.rel(attempt))
    u = UnitContext(project, store, SimpleNamespace(id="def-a", kind="theorem"), run)  # type: ignore[arg-type]
    assert _frozen_refuted(u) is refuted
    assert record.tally(attempt) == ({"executed": 1, "refuting": 1, "worthless": 0} if refuted else
                                     {"executed": 0, "refuting": 0, "worthless": 1})
    out = frozen_refutation_outcome(_ctx(project, attempt, store=store, run_id=9))
    if not refuted:
        assert out is None
        # the next prove attempt does not run the same check on the same statement again
        later = attempt.parent / "000011-prove"
        later.mkdir()
        store.runs = lambda unit: [SimpleNamespace(id=9, stage=Stage.PROVE, attempt_dir=run.attempt_dir)]
        again = UnitContext(project, store, u.unit, SimpleNamespace(id=11, attempt_dir=project.paths.rel(later)))
        assert _frozen_refuted(again) is False and not (later / "frozen-refutation").exists()
        return
    assert out is not None and not out.passed and out.failure_kind is FailureKind.REFUTED
    assert out.rewind_to is Stage.AUDIT
    assert out.reason.startswith("frozen statement refuted on small instance: U.t is false")
    assert "re-audit (`fyan audit`) or give guidance" in out.reason
    assert (attempt / "frozen-refutation-check" / "outcome.json").is_file()
    assert classify(out.reason).summary == "frozen statement refuted on small instance"
    # the store's freeze changed since: the attempt's outcome is evidence of nothing
    store.freezes = lambda unit: [_freeze("theorem t (a : Bool) : Eq a a")]
    assert frozen_refutation_outcome(_ctx(project, attempt, store=store, run_id=9)) is None


def test_a_refuted_failure_blocks_until_guidance_then_goes_back_to_the_audit():
    refuted = StageRun(id=5, unit="u", stage=Stage.PROVE, attempt=1, status=RunStatus.FAILED, started_at=0.0,
                       finished_at=1.0, reason="frozen statement refuted on small instance: x → y",
                       failure_kind=FailureKind.REFUTED, rewind_to=Stage.AUDIT, attempt_dir="a")
    earlier = [StageRun(id=i, unit="u", stage=s, attempt=1, status=RunStatus.SUCCEEDED, started_at=0.0,
                        finished_at=1.0, attempt_dir="a") for i, s in enumerate([Stage.REASON, Stage.PLAN, Stage.AUDIT], 1)]
    p = progress(earlier + [refuted], attempts_per_stage=3, session_start=10.0)
    assert p.blocked_reason == refuted.reason and p.next_stage is Stage.AUDIT
    assert p.attempts["prove"] == 1
    p = progress(earlier + [refuted], attempts_per_stage=3, session_start=10.0, reset_after=5)
    assert p.blocked_reason is None and p.next_stage is Stage.AUDIT


# -- fyan status -----------------------------------------------------------------------------------------

@needs_bwrap
def test_status_shows_each_units_searches_in_text_and_json(tmp_path, no_lake):
    from fyan.commands.status import Payload

    replies = {"reason": [PROOF + " Step 2: " + EVEN_STEP + ".", PROOF + " (revised)"],
               "reason_review": [review("sound", REFUTING + [search("5", EVEN_STEP, "def predicate(n)\n")]),
                                 review("sound")]}
    project, gateway, run = replayed(tmp_path, replies)
    status = project_status(project, gateway.store, with_stale=False)
    row = next(u for u in status.units if u["id"] == "def-a")
    assert row["refutations"] == {"executed": 2, "refuting": 2, "worthless": 1}
    other = next(u for u in status.units if u["id"] != "def-a")
    assert other["refutations"] == {"executed": 0, "refuting": 0, "worthless": 0}
    payload = Payload.model_validate(status.as_payload())
    assert payload.units and payload.units[0].refutations is not None
    text = status_text(status, str(project.paths.root))
    assert "counterexample searches per unit (executed/refuting/worthless): def-a 2/2/1" in text
    gateway.close()
