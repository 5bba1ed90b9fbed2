"""The cheat corpus (tests/cheats/): every trick is rejected by the check meant to catch it.

In CI no Lean runs: the toolchain is the Lake double (``tests/fakes/fake_lake.py``) and the
trusted inspector is its double (``tests/fakes/fake_inspector.py``), which derives its report
from the *built* source (any ``sorry``/``admit`` is ``sorryAx``, axioms, ``native_decide``,
macros, attributes...); the manifest's replays add only what a real Lean would report beyond
that, and say so: they are **authored**, not recorded (``manifest.toml``). What is real here is
everything on Fyan's side: the rendered unit files, the gate workspace, the Lake runner and its
verdict, the diagnostics parser, the inspector's build, hash check, invocation and report
schema, the policy, the freeze and the gate. With a real ``lake`` on PATH the tests marked
``lean`` run the same corpus against it (the replays are not used).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from fyan.gates.completion import CHECK_ORDER
from fyan.models.gate_report import GateReport
from fyan.lean.lints import errors as lint_errors
from fyan.lean.lints import lint
from fyan.config import FyanConfig
from fyan.trust.corpus import cases as corpus_cases
from fyan.trust.corpus import cases_dir, load_manifest
from fyan.selftest.run import run_case
from tests import gate_harness as h
from tests.cheat_replay import replay

CHEATS_DIR = cases_dir()  # the files `fyan selftest` runs (fyan.trust.corpus): one source of truth
MANIFEST = load_manifest()
CHEATS = MANIFEST["cheat"]
CONTROLS = MANIFEST["control"]
TRICKS = {  # the original list of tricks, each covered by a cheat file
    "sorry", "admit", "sorryax_direct", "macro_sorry", "user_axiom", "native_decide", "implemented_by",
    "skip_kernel_tc", "exit_before_root", "forged_axioms", "local_notation", "auto_implicit", "true_root",
    "edited_statement", "bridge_deleted",
}


def model_part(entry: dict) -> str:
    return (CHEATS_DIR / entry["file"]).read_text(encoding="utf-8")


def setup_for(entry: dict, root: Path) -> h.Setup:
    return h.setup(root, model_part(entry), bridge=entry.get("setup") == "bridge", meta=entry.get("setup") == "meta")


def assert_rejected_as_intended(report: GateReport, entry: dict, *, exact: bool, kernel_checker: bool = False) -> None:
    assert report.passed is False, f"{entry['id']} passed the gate"
    intended = report.check(entry["caught_by"])
    assert intended.status == "fail" and intended.required, (entry["id"], intended)
    assert entry["reason"] in intended.reason, (entry["id"], intended.reason)
    expected = {entry["caught_by"]: entry["reason"], **entry.get("also", {})}
    if kernel_checker:
        expected.update(entry.get("with_kernel_checker", {}))
    for name, fragment in expected.items():
        c = report.check(name)
        assert c.status == "fail" and fragment in c.reason, (entry["id"], name, c.reason)
    if exact:  # the replayed output: exactly these checks fail, every other one passes
        failing = {c.name for c in report.checks if c.status == "fail"}
        assert failing == set(expected), (entry["id"], failing)


def test_the_corpus_covers_every_trick_and_every_finding_with_an_intended_check():
    assert {c["id"] for c in CHEATS} >= TRICKS
    every = [e for kind in ("cheat", "agent_cheat", "document_cheat", "shadow_cheat", "scenario_cheat")
             for e in MANIFEST.get(kind, [])]
    assert {str(n) for n in range(1, 9)} - {"2", "5", "6", "7"} <= {e["finding"] for e in CHEATS}
    assert {str(n) for n in range(1, 8)} <= {e["finding"] for e in every}
    for c in CHEATS + CONTROLS:
        assert (CHEATS_DIR / c["file"]).is_file(), c["file"]
    for c in CHEATS:
        assert c["verdict"] == "rejected" and c["caught_by"] in CHECK_ORDER and c["reason"], c["id"]
        assert set(c.get("also", {})) | set(c.get("with_kernel_checker", {})) <= set(CHECK_ORDER), c["id"]
    for e in every:
        assert e.get("test") or e.get("file"), e["id"]
    assert sorted(p.name for p in CHEATS_DIR.glob("*.lean")) == sorted(c["file"] for c in CHEATS + CONTROLS)
    assert MANIFEST["replay_origin"].startswith("authored")


def test_cheat_files_are_valid_lean_as_written():
    """Finding 9: a file that uses Lean's API must import it (setup `meta`: the unit imports
    `Lean`); an SA-Pass submission imports what it uses."""
    uses_lean = re.compile(r"\bopen Lean\b|\bLean\.|\baddDecl\b|\bMacro\b|\bCommandElab\b|\bTactic\b(?! \w)")
    for c in CHEATS + CONTROLS:
        text = re.sub(r"--.*", "", model_part(c))
        if uses_lean.search(text):
            assert c.get("setup") == "meta", f"{c['file']} uses Lean's API without importing Lean"
        assert "import " not in text, c["file"]  # imports are Fyan's: the setup provides them
    for c in MANIFEST.get("shadow_cheat", []):
        assert (CHEATS_DIR / c["file"]).read_text().startswith("import Mathlib\n")


@pytest.mark.parametrize("entry", CHEATS, ids=[c["id"] for c in CHEATS])
def test_the_lints_flag_each_cheat_where_text_can_show_it(entry):
    findings = lint(model_part(entry))
    if entry["lint"]:
        assert entry["lint"] in {f.rule for f in findings}, (entry["id"], [str(f) for f in findings])
    else:
        assert lint_errors(findings) == [], (entry["id"], [str(f) for f in findings])


@pytest.mark.parametrize("entry", CONTROLS, ids=[c["id"] for c in CONTROLS])
def test_controls_pass_the_gate(entry, fake_lake, tmp_path):
    s = setup_for(entry, tmp_path / "p")
    report = s.gate(scenario=None, fake=fake_lake)
    assert report.passed, report.summary()
    assert lint(model_part(entry)) == []


@pytest.mark.parametrize("entry", CHEATS, ids=[c["id"] for c in CHEATS])
def test_cheat_is_rejected_by_the_intended_check(entry, fake_lake, tmp_path):
    s = setup_for(entry, tmp_path / "p")
    report = s.gate(scenario=replay(s, entry), fake=fake_lake)
    assert_rejected_as_intended(report, entry, exact=True)
    # the report is what `fyan gate` shows: every check with its reason
    assert [c.name for c in report.checks] == list(CHECK_ORDER)


@pytest.mark.parametrize("entry", [c for c in CHEATS if "with_kernel_checker" in c],
                         ids=[c["id"] for c in CHEATS if "with_kernel_checker" in c])
def test_kernel_replay_catches_proofs_added_without_kernel_checking(entry, fake_lake, tmp_path):
    checker = fake_lake.install_kernel_checker()  # stands in for the toolchain's leanchecker
    s = setup_for(entry, tmp_path / "p")
    report = s.gate(scenario=replay(s, entry), fake=fake_lake)
    assert_rejected_as_intended(report, entry, exact=True, kernel_checker=True)
    replay_check = report.check("kernel_replay")
    assert replay_check.required and replay_check.evidence["command"].startswith(f"{checker} Cheats.ThmRoot.Basic")


def test_kernel_replay_passes_an_honest_unit_when_a_checker_exists(fake_lake, tmp_path):
    fake_lake.install_kernel_checker()
    honest = h.setup(tmp_path / "q", h.HONEST)
    report = honest.gate(scenario=None, fake=fake_lake)
    assert report.passed and report.check("kernel_replay").status == "pass"


def test_forged_text_in_the_build_log_is_never_read(fake_lake, tmp_path):
    entry = next(c for c in CHEATS if c["id"] == "forged_axioms")
    s = setup_for(entry, tmp_path / "p")
    s.gate(scenario=replay(s, entry), fake=fake_lake)
    build_log = (s.project.paths.root / "gate-logs" / "build.log").read_text(encoding="utf-8")
    assert "depends on axioms: [propext, Classical.choice, Quot.sound]" in build_log
    assert "FYAN-PROBE-0000" in build_log
    report = s.gate(scenario=replay(s, entry), fake=fake_lake)
    assert report.check("axiom_audit").evidence["axioms"] == {"Cheats.ThmRoot.double_even": ["Cheats.ThmRoot.magic"]}


def test_the_lake_double_takes_sorry_as_sorry_ax_by_default(fake_lake, tmp_path):
    """Finding 9: in a default scenario (no replay) a `sorry` or `admit` proof fails the gate."""
    for word in ("sorry", "admit"):
        s = h.setup(tmp_path / word, f"theorem double_even (n : Int) : ∃ k, double n = 2 * k := by\n  {word}")
        report = s.gate(scenario=None, fake=fake_lake)
        assert not report.passed
        assert "sorryAx in the axioms of Cheats.ThmRoot.double_even" in report.check("sorry_free").reason
        assert "sorryAx (rejected by name" in report.check("axiom_audit").reason


# -- with a real toolchain --------------------------------------------------------------------

requires_lean = pytest.mark.skipif(shutil.which("lake") is None, reason="no Lean toolchain (`lake`) on PATH")


@pytest.fixture
def real_lake(monkeypatch, tmp_path):
    monkeypatch.delenv("FYAN_LEAN__LAKE", raising=False)
    monkeypatch.delenv("FYAN_FAKE_SCENARIO", raising=False)
    monkeypatch.setenv("FYAN_LEAN__BUILD_TIMEOUT", "1800")


@pytest.mark.lean
@requires_lean
@pytest.mark.parametrize("case", corpus_cases(), ids=[c.id for c in corpus_cases()])
def test_corpus_case_with_real_lean(case, real_lake, tmp_path):
    """What `fyan selftest` runs for each case (``fyan.selftest.run.run_case``): the same code, so
    `pytest -m lean` and `fyan selftest` cannot drift apart."""
    result = run_case(case, FyanConfig(project={"name": "t", "source": "-"}).lean.toolchain, tmp_path / case.id)
    assert result.ok, (case.id, result.caught_by, result.problems)


ENVIRONMENT_SHOWN = [c for c in CHEATS if c["caught_by"] != "source_lints"]


@pytest.mark.parametrize("entry", [c for c in ENVIRONMENT_SHOWN if c["finding"] in ("kernel-evaluated code",
                                                                                     "smaller holes", "4")],
                         ids=[c["id"] for c in ENVIRONMENT_SHOWN if c["finding"] in ("kernel-evaluated code",
                                                                                     "smaller holes", "4")])
def test_a_lint_miss_is_still_caught_by_the_environment_rule(entry, fake_lake, tmp_path, monkeypatch):
    """The lints are a second line. With every lint blind (a spelling no lint knows), a
    cheat the compiled environment shows is still rejected by its intended check."""
    import fyan.gates.completion as completion

    monkeypatch.setattr(completion, "lint", lambda text, **kw: [])
    s = setup_for(entry, tmp_path / "p")
    report = s.gate(scenario=replay(s, entry), fake=fake_lake)
    assert report.check("source_lints").status == "pass", report.check("source_lints").reason
    intended = report.check(entry["caught_by"])
    assert not report.passed and intended.status == "fail" and entry["reason"] in intended.reason, intended


def test_kernel_allow_admits_exactly_the_kernel_evaluated_constants_it_names(fake_lake, tmp_path):
    """`[lean] kernel_allow` is the only way a unit may reach Lean.reduceBool/reduceNat;
    it admits the constants it names and nothing else, and names nothing but those constants."""
    import pydantic

    from fyan.config import LeanSection

    by_id = {c["id"]: c for c in CHEATS}
    allowed = h.setup(tmp_path / "a", model_part(by_id["reduce_bool_abbrev"]), meta=True,
                      lean={"kernel_allow": ["Lean.reduceBool"]})
    report = allowed.gate(scenario=None, fake=fake_lake)
    assert report.passed, report.summary()
    other = h.setup(tmp_path / "b", model_part(by_id["reduce_nat_root"]), meta=True,
                    lean={"kernel_allow": ["Lean.reduceBool"]})
    report = other.gate(scenario=None, fake=fake_lake)
    assert not report.passed and "reaches Lean.reduceNat" in report.check("environment_policy").reason
    for bad in (["Lean.ofReduceBool"], ["propext"], ["Lean.*"]):
        with pytest.raises(pydantic.ValidationError, match="not kernel-evaluated constants"):
            LeanSection(kernel_allow=bad)


def test_a_foreign_instance_the_plan_declares_is_admitted_and_only_that_one(fake_lake, tmp_path):
    """An instance about a type the unit does not own passes `environment_policy` only
    when the audited plan (`lemma_dag.json`, a node of kind `instance`) declares it by name."""
    import json

    by_id = {c["id"]: c for c in CHEATS}
    plan = {"roots": ["double_even"], "nodes": [
        {"name": "double_even", "statement": "double n is even"},
        {"name": "intLEAnything", "kind": "instance", "statement": "an order on Int (declared on purpose)"}]}
    declared = h.setup(tmp_path / "a", model_part(by_id["foreign_instance"]), lemma_dag=json.dumps(plan))
    report = declared.gate(scenario=None, fake=fake_lake)
    policy = report.check("environment_policy")
    assert policy.status == "pass" and policy.evidence["declared_registrations"] == ["Cheats.ThmRoot.intLEAnything"]
    other = h.setup(tmp_path / "b", model_part(by_id["foreign_coercion"]), lemma_dag=json.dumps(plan))
    report = other.gate(scenario=None, fake=fake_lake)
    assert "Cheats.ThmRoot.boolToInt: an instance about" in report.check("environment_policy").reason
